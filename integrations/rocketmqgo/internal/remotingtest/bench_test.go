package remotingtest

import (
	"bytes"
	"testing"
)

// BenchmarkBrokerSendRoundTrip measures one SEND_MESSAGE answered over
// loopback by a healthy broker, as seen by a client waiting for each answer.
func BenchmarkBrokerSendRoundTrip(b *testing.B) {
	br, err := NewBroker("bench", WithLogger(quietLogger))
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	rc := dialRaw(b, br.Addr())
	cmd := sendV1("T", "0", "UNIQ_KEY\x01u\x02KEYS\x01k\x02", "payload")
	b.ReportAllocs()
	for b.Loop() {
		opaque := rc.send(cmd)
		resp, err := rc.recv()
		if err != nil || resp.opaque != opaque || resp.code != CodeSuccess {
			b.Fatalf("answer = %+v, %v", resp, err)
		}
	}
}

// BenchmarkDecodeFrame measures decoding a send request frame as the Go
// client writes it (JSON header).
func BenchmarkDecodeFrame(b *testing.B) {
	cmd := sendV1("TopicTest", "3", "UNIQ_KEY\x01C0000202472200000000943dad300001\x02KEYS\x01k1 k2\x02", "hello")
	cmd.language = "GO"
	frame, err := encodeFrame(&cmd)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := readCommand(bytes.NewReader(frame), DefaultMaxFrameSize); err != nil {
			b.Fatal(err)
		}
	}
}
