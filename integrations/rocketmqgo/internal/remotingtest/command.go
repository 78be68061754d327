package remotingtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The remoting frame, as RocketMQ's NettyEncoder writes it:
//
//	int32 total length (everything after these 4 bytes)
//	int32 header length, its high byte the header's serialize type
//	header (JSON, or RocketMQ's own binary layout)
//	body (total length - 4 - header length bytes)
//
// Integers are big-endian. Flag bit 0 marks a response, bit 1 a one-way
// request (no answer expected).

const (
	serializeJSON     byte = 0
	serializeRocketMQ byte = 1

	flagResponse int32 = 1 << 0
	flagOneway   int32 = 1 << 1

	// DefaultMaxFrameSize is the largest frame a server reads (16 MiB, like
	// a RocketMQ broker); larger frames close the connection as malformed.
	DefaultMaxFrameSize = 16 << 20

	// serverVersion is the version field of every response: RocketMQ's
	// MQVersion ordinal of V4_9_8, which the Go client stores and never
	// reads back.
	serverVersion int16 = 453
)

// command is one decoded remoting frame.
type command struct {
	code      int16
	language  string
	version   int16
	opaque    int32
	flag      int32
	remark    string
	extFields map[string]string
	body      []byte
	serialize byte
}

func (c *command) isResponse() bool { return c.flag&flagResponse != 0 }
func (c *command) isOneway() bool   { return c.flag&flagOneway != 0 }

// errMalformed marks a frame that cannot be decoded; the connection it came
// on cannot be trusted any further and is closed.
var errMalformed = errors.New("malformed remoting frame")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// readCommand reads one frame. A connection closed cleanly between frames
// yields io.EOF; a frame that is cut short, too large or undecodable yields
// an error wrapping errMalformed.
func readCommand(r io.Reader, maxFrame int) (*command, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, malformed("connection closed inside the length prefix")
		}
		return nil, err
	}
	total := int64(int32(binary.BigEndian.Uint32(prefix[:])))
	if total < 4 || total > int64(maxFrame) {
		return nil, malformed("frame length %d outside [4, %d]", total, maxFrame)
	}
	frame := make([]byte, total)
	if _, err := io.ReadFull(r, frame); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, malformed("connection closed inside a %d-byte frame", total)
		}
		return nil, err
	}
	return decodeFrame(frame)
}

// decodeFrame decodes a frame without its 4-byte total length prefix.
func decodeFrame(frame []byte) (*command, error) {
	if len(frame) < 4 {
		return nil, malformed("frame of %d bytes has no header length", len(frame))
	}
	mark := binary.BigEndian.Uint32(frame)
	serialize := byte(mark >> 24)
	headerLen := int(mark & 0xFFFFFF)
	if headerLen > len(frame)-4 {
		return nil, malformed("header length %d exceeds the %d bytes left in the frame", headerLen, len(frame)-4)
	}
	header := frame[4 : 4+headerLen]
	var (
		cmd *command
		err error
	)
	switch serialize {
	case serializeJSON:
		cmd, err = decodeJSONHeader(header)
	case serializeRocketMQ:
		cmd, err = decodeRocketMQHeader(header)
	default:
		return nil, malformed("unknown serialize type %d", serialize)
	}
	if err != nil {
		return nil, err
	}
	cmd.serialize = serialize
	if body := frame[4+headerLen:]; len(body) > 0 {
		cmd.body = body
	}
	return cmd, nil
}

// jsonHeader is the JSON header as RocketMQ writes it.
type jsonHeader struct {
	Code      int16             `json:"code"`
	Language  string            `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark,omitempty"`
	ExtFields map[string]string `json:"extFields,omitempty"`
	// SerializeTypeCurrentRPC is what a Java server writes; clients ignore it.
	SerializeTypeCurrentRPC string `json:"serializeTypeCurrentRPC,omitempty"`
}

func decodeJSONHeader(b []byte) (*command, error) {
	var h jsonHeader
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, malformed("JSON header: %v", err)
	}
	return &command{
		code: h.Code, language: h.Language, version: h.Version, opaque: h.Opaque,
		flag: h.Flag, remark: h.Remark, extFields: h.ExtFields,
	}, nil
}

// decodeRocketMQHeader decodes RocketMQ's binary header: int16 code, byte
// language, int16 version, int32 opaque, int32 flag, int32 remark length and
// remark, int32 ext-fields length and, that many bytes of (int16 key length,
// key, int32 value length, value) pairs.
func decodeRocketMQHeader(b []byte) (*command, error) {
	r := headerReader{b: b}
	cmd := &command{}
	cmd.code = int16(r.uint16())
	cmd.language = languageName(r.byte())
	cmd.version = int16(r.uint16())
	cmd.opaque = int32(r.uint32())
	cmd.flag = int32(r.uint32())
	cmd.remark = string(r.bytes(int(int32(r.uint32()))))
	ext := r.bytes(int(int32(r.uint32())))
	if r.err != nil {
		return nil, r.err
	}
	if len(ext) > 0 {
		cmd.extFields = make(map[string]string)
		er := headerReader{b: ext}
		for er.err == nil && len(er.b) > 0 {
			k := er.bytes(int(er.uint16()))
			v := er.bytes(int(int32(er.uint32())))
			if er.err == nil {
				cmd.extFields[string(k)] = string(v)
			}
		}
		if er.err != nil {
			return nil, er.err
		}
	}
	if len(r.b) != 0 {
		return nil, malformed("%d bytes left after the binary header", len(r.b))
	}
	return cmd, nil
}

// headerReader reads big-endian fields and remembers the first shortfall.
type headerReader struct {
	b   []byte
	err error
}

func (r *headerReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = malformed("binary header wants %d bytes, %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *headerReader) byte() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *headerReader) uint16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *headerReader) uint32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *headerReader) bytes(n int) []byte { return r.take(n) }

// languageName maps RocketMQ's LanguageCode ordinal to its name.
func languageName(b byte) string {
	switch b {
	case 0:
		return "JAVA"
	case 9:
		return "GO"
	}
	return fmt.Sprintf("LANGUAGE_%d", b)
}

// encodeFrame encodes cmd as a full frame, length prefix included, with the
// header in cmd.serialize's form.
func encodeFrame(cmd *command) ([]byte, error) {
	var header []byte
	switch cmd.serialize {
	case serializeJSON:
		h := jsonHeader{
			Code: cmd.code, Language: cmd.language, Version: cmd.version, Opaque: cmd.opaque,
			Flag: cmd.flag, Remark: cmd.remark, ExtFields: cmd.extFields,
			SerializeTypeCurrentRPC: "JSON",
		}
		var err error
		if header, err = json.Marshal(h); err != nil {
			return nil, fmt.Errorf("encode JSON header: %w", err)
		}
	case serializeRocketMQ:
		header = encodeRocketMQHeader(cmd)
	default:
		return nil, fmt.Errorf("encode frame: unknown serialize type %d", cmd.serialize)
	}
	if len(header) > 0xFFFFFF {
		return nil, fmt.Errorf("encode frame: header of %d bytes does not fit 24 bits", len(header))
	}
	var buf bytes.Buffer
	buf.Grow(8 + len(header) + len(cmd.body))
	_ = binary.Write(&buf, binary.BigEndian, int32(4+len(header)+len(cmd.body)))
	_ = binary.Write(&buf, binary.BigEndian, uint32(cmd.serialize)<<24|uint32(len(header)))
	buf.Write(header)
	buf.Write(cmd.body)
	return buf.Bytes(), nil
}

func encodeRocketMQHeader(cmd *command) []byte {
	var buf bytes.Buffer
	put := func(v any) { _ = binary.Write(&buf, binary.BigEndian, v) }
	put(cmd.code)
	put(languageCode(cmd.language))
	put(cmd.version)
	put(cmd.opaque)
	put(cmd.flag)
	put(int32(len(cmd.remark)))
	buf.WriteString(cmd.remark)
	var ext bytes.Buffer
	for k, v := range cmd.extFields {
		_ = binary.Write(&ext, binary.BigEndian, int16(len(k)))
		ext.WriteString(k)
		_ = binary.Write(&ext, binary.BigEndian, int32(len(v)))
		ext.WriteString(v)
	}
	put(int32(ext.Len()))
	buf.Write(ext.Bytes())
	return buf.Bytes()
}

func languageCode(name string) byte {
	if name == "GO" {
		return 9
	}
	return 0
}

// response builds the answer to req: same opaque and serialize type, the
// response flag set.
func response(req *command, code int16, remark string, ext map[string]string, body []byte) *command {
	return &command{
		code: code, language: "JAVA", version: serverVersion, opaque: req.opaque,
		flag: flagResponse, remark: remark, extFields: ext, body: body, serialize: req.serialize,
	}
}
