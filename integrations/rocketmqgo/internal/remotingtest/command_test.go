package remotingtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		cmd  command
	}{
		{"json with ext fields and body", command{
			code: CodeSendMessage, language: "GO", version: 317, opaque: 42, flag: 0,
			extFields: map[string]string{"topic": "T", "queueId": "3"}, body: []byte("hello"), serialize: serializeJSON,
		}},
		{"json response with remark, no body", command{
			code: CodeSystemBusy, language: "JAVA", version: serverVersion, opaque: -7, flag: flagResponse,
			remark: "busy \"now\"", serialize: serializeJSON,
		}},
		{"rocketmq binary with ext fields and body", command{
			code: CodeSendMessageV2, language: "GO", version: 317, opaque: 1 << 30, flag: flagOneway,
			remark: "r", extFields: map[string]string{"b": "T", "e": "0", "": "empty key"}, body: []byte{0, 1, 2},
			serialize: serializeRocketMQ,
		}},
		{"rocketmq binary bare", command{code: CodeHeartbeat, language: "JAVA", serialize: serializeRocketMQ}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := encodeFrame(&tt.cmd)
			if err != nil {
				t.Fatalf("encodeFrame() error = %v", err)
			}
			got, err := readCommand(bytes.NewReader(frame), DefaultMaxFrameSize)
			if err != nil {
				t.Fatalf("readCommand() error = %v", err)
			}
			if !reflect.DeepEqual(*got, tt.cmd) {
				t.Errorf("readCommand(encodeFrame(c)) = %+v, want %+v", *got, tt.cmd)
			}
		})
	}
}

// frameOf builds a frame from a header length word and the bytes after it.
func frameOf(mark uint32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(rest)))
	b = binary.BigEndian.AppendUint32(b, mark)
	return append(b, rest...)
}

// jsonFrame builds a frame whose JSON header is header, without a body.
func jsonFrame(header string) []byte { return frameOf(uint32(len(header)), []byte(header)) }

func TestReadCommandMalformed(t *testing.T) {
	okJSON := []byte(`{"code":10,"opaque":1}`)
	tests := []struct {
		name  string
		input []byte
		want  string // a part of the error text
	}{
		{"negative length", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}, "frame length -1"},
		{"length below the header word", []byte{0, 0, 0, 3, 0, 0, 0}, "frame length 3"},
		{"length above the limit", binary.BigEndian.AppendUint32(nil, 1<<30), "frame length 1073741824"},
		{"cut inside the prefix", []byte{0, 0}, "inside the length prefix"},
		{"cut inside the frame", []byte{0, 0, 0, 10, 0, 0}, "inside a 10-byte frame"},
		{"header longer than frame", frameOf(100, okJSON), "header length 100 exceeds"},
		{"unknown serialize type", frameOf(2<<24|uint32(len(okJSON)), okJSON), "unknown serialize type 2"},
		{"bad json", jsonFrame("{nope"), "JSON header"},
		{"json ext field not a string", jsonFrame(`{"extFields":{"a":1}}`), "JSON header"},
		{"binary header short", frameOf(1<<24|3, []byte{0, 10, 0}), "binary header wants"},
		{"binary remark length past the end", frameOf(1<<24|21, append(make([]byte, 13), 0, 0, 0, 50, 0, 0, 0, 0)), "binary header wants 50"},
		{"binary ext pair cut", frameOf(1<<24|24, append(make([]byte, 17), 0, 0, 0, 3, 0, 5, 'k')), "binary header wants"},
		{"binary trailing bytes", frameOf(1<<24|22, make([]byte, 22)), "1 bytes left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readCommand(bytes.NewReader(tt.input), 1<<20)
			if !errors.Is(err, errMalformed) {
				t.Fatalf("readCommand() error = %v, want errMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("readCommand() error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestReadCommandCleanEOF(t *testing.T) {
	if _, err := readCommand(bytes.NewReader(nil), DefaultMaxFrameSize); err != io.EOF {
		t.Errorf("readCommand(empty) error = %v, want io.EOF", err)
	}
}

// FuzzReadCommand checks that no input panics the frame reader and that
// whatever it accepts encodes and decodes to the same command.
func FuzzReadCommand(f *testing.F) {
	for _, c := range []command{
		{code: 10, language: "GO", opaque: 1, extFields: map[string]string{"topic": "T"}, body: []byte("x")},
		{code: 34, opaque: 2, remark: "r", serialize: serializeRocketMQ, extFields: map[string]string{"k": "v"}},
	} {
		frame, err := encodeFrame(&c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
	}
	f.Add([]byte{0, 0, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := readCommand(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		frame, err := encodeFrame(cmd)
		if err != nil {
			return // e.g. a language name the binary header cannot carry is still encodable; JSON never fails
		}
		again, err := readCommand(bytes.NewReader(frame), 1<<20)
		if err != nil {
			t.Fatalf("readCommand(encodeFrame(%+v)) error = %v", cmd, err)
		}
		if again.code != cmd.code || again.opaque != cmd.opaque || again.flag != cmd.flag ||
			again.remark != cmd.remark || !bytes.Equal(again.body, cmd.body) || len(again.extFields) != len(cmd.extFields) {
			t.Fatalf("round trip = %+v, want %+v", again, cmd)
		}
	})
}
