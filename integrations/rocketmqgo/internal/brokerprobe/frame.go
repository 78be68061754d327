package brokerprobe

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The remoting frame, as a RocketMQ broker reads and writes it:
//
//	int32  total length: every byte after these four
//	uint32 header mark: high byte the header's serialization type
//	       (0 JSON, 1 RocketMQ binary), low 24 bits the header length
//	header
//	body   (total length - 4 - header length bytes)
//
// Integers are big-endian. Bit 0 of the header's flag marks a response.

const (
	serializeJSON     byte = 0
	serializeRocketMQ byte = 1

	flagResponse int32 = 1 << 0

	// codeGetMaxOffset is RocketMQ's RequestCode.GET_MAX_OFFSET.
	codeGetMaxOffset int16 = 30
	// codeSuccess is ResponseCode.SUCCESS.
	codeSuccess int16 = 0

	// languageGo is LanguageCode.GO's name, as the Go client sends it.
	languageGo = "GO"
	// requestVersion is the version field of the request: the Go client's
	// (RocketMQ's MQVersion ordinal of V4_3_0, 317, as rocketmq-client-go
	// sends). Brokers only read it to pick serialization quirks.
	requestVersion int16 = 317

	// DefaultMaxFrameSize is the largest answer a probe reads (64 KiB). An
	// answer to GET_MAX_OFFSET is a few hundred bytes; a larger announced
	// length is garbage, refused before anything is allocated for it.
	DefaultMaxFrameSize = 64 << 10
)

// ErrMalformed is wrapped by every error about bytes a broker sent that are
// not a well-formed remoting answer: a length out of bounds, a cut frame, an
// undecodable header, a request where a response belongs, a foreign opaque,
// a missing offset.
var ErrMalformed = errors.New("malformed remoting answer")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// header is a decoded remoting header: the fields a probe reads.
type header struct {
	Code      int16             `json:"code"`
	Language  string            `json:"language,omitempty"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark,omitempty"`
	ExtFields map[string]string `json:"extFields,omitempty"`
}

// appendRequest appends the frame of a GET_MAX_OFFSET request for topic's
// queue queueID with the given opaque, JSON-serialized, to dst. broker, when
// not empty, goes in the "bname" field a 5.x proxy's remoting port wants.
func appendRequest(dst []byte, opaque int32, topic string, queueID int, broker string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // total length and header mark, set below
	hstart := len(dst)
	dst = append(dst, `{"code":30,"language":"GO","version":317,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(opaque), 10)
	dst = append(dst, `,"flag":0,"extFields":{"topic":`...)
	dst = appendJSONString(dst, topic)
	dst = append(dst, `,"queueId":"`...)
	dst = strconv.AppendInt(dst, int64(queueID), 10)
	dst = append(dst, '"')
	if broker != "" {
		dst = append(dst, `,"bname":`...)
		dst = appendJSONString(dst, broker)
	}
	dst = append(dst, `}}`...)
	hlen := len(dst) - hstart
	binary.BigEndian.PutUint32(dst[start:], uint32(4+hlen))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(serializeJSON)<<24|uint32(hlen))
	return dst
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// decodeFrame decodes a frame without its 4-byte total length prefix.
func decodeFrame(frame []byte) (*header, error) {
	if len(frame) < 4 {
		return nil, malformed("frame of %d bytes has no header length", len(frame))
	}
	mark := binary.BigEndian.Uint32(frame)
	serialize := byte(mark >> 24)
	hlen := int(mark & 0xFFFFFF)
	if hlen > len(frame)-4 {
		return nil, malformed("header length %d exceeds the %d bytes left in the frame", hlen, len(frame)-4)
	}
	raw := frame[4 : 4+hlen]
	switch serialize {
	case serializeJSON:
		var h header
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, malformed("JSON header: %v", err)
		}
		return &h, nil
	case serializeRocketMQ:
		return decodeBinaryHeader(raw)
	}
	return nil, malformed("unknown serialization type %d", serialize)
}

// decodeBinaryHeader decodes RocketMQ's binary header: int16 code, byte
// language, int16 version, int32 opaque, int32 flag, int32 remark length and
// remark, int32 ext-fields length and that many bytes of (int16 key length,
// key, int32 value length, value).
func decodeBinaryHeader(b []byte) (*header, error) {
	r := reader{b: b}
	h := &header{}
	h.Code = int16(r.u16())
	r.take(1) // language
	h.Version = int16(r.u16())
	h.Opaque = int32(r.u32())
	h.Flag = int32(r.u32())
	h.Remark = string(r.take(int(int32(r.u32()))))
	ext := r.take(int(int32(r.u32())))
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, malformed("%d bytes left after the binary header", len(r.b))
	}
	if len(ext) > 0 {
		h.ExtFields = make(map[string]string)
		er := reader{b: ext}
		for er.err == nil && len(er.b) > 0 {
			k := er.take(int(er.u16()))
			v := er.take(int(int32(er.u32())))
			if er.err == nil {
				h.ExtFields[string(k)] = string(v)
			}
		}
		if er.err != nil {
			return nil, er.err
		}
	}
	return h, nil
}

// reader reads big-endian fields and keeps the first shortfall.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
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

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// checkAnswer checks that h answers the request with opaque: a response,
// same opaque, SUCCESS with an integer offset. It returns the offset.
func checkAnswer(h *header, opaque int32) (int64, error) {
	if h.Flag&flagResponse == 0 {
		return 0, malformed("got a request (code %d, opaque %d) where the answer belongs", h.Code, h.Opaque)
	}
	if h.Opaque != opaque {
		return 0, malformed("answer carries opaque %d, the probe sent %d", h.Opaque, opaque)
	}
	if h.Code != codeSuccess {
		return 0, &AnswerError{Code: h.Code, Remark: h.Remark}
	}
	s, ok := h.ExtFields["offset"]
	if !ok {
		return 0, malformed("SUCCESS answer has no offset field")
	}
	off, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, malformed("offset %s is not an integer", clip(s))
	}
	return off, nil
}

// AnswerError is a well-formed answer with a code other than SUCCESS: the
// broker is up but refused the question (SYSTEM_BUSY, a proxy's missing
// field, NO_PERMISSION under ACL, ...). As in the reference, whose detector
// counts only a successful getMaxOffset, the probe reports it unreachable.
type AnswerError struct {
	Code   int16
	Remark string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("broker answered GET_MAX_OFFSET with code %d (%s)", e.Code, clip(e.Remark))
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 120
	if len(s) > n {
		return strconv.Quote(s[:n]) + "…"
	}
	return strconv.Quote(s)
}
