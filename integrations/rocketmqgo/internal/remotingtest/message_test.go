package remotingtest

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"two", "KEYS\x01k1 k2\x02UNIQ_KEY\x01abc\x02", map[string]string{"KEYS": "k1 k2", "UNIQ_KEY": "abc"}},
		{"no trailing separator", "TAGS\x01t", map[string]string{"TAGS": "t"}},
		{"entry without value separator ignored", "junk\x02A\x01\x02", map[string]string{"A": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseProperties(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseProperties(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseSendHeader(t *testing.T) {
	tests := []struct {
		name    string
		ext     map[string]string
		want    sendHeader
		wantErr string
	}{
		{"v1", map[string]string{"producerGroup": "g", "topic": "T", "queueId": "2", "properties": "p", "batch": "false"},
			sendHeader{group: "g", topic: "T", queueID: 2, properties: "p"}, ""},
		{"v2", map[string]string{"a": "g", "b": "T", "e": "3", "i": "p", "m": "true"},
			sendHeader{group: "g", topic: "T", queueID: 3, properties: "p", batch: true}, ""},
		{"v1 without batch field", map[string]string{"topic": "T", "queueId": "0"}, sendHeader{topic: "T"}, ""},
		{"no topic", map[string]string{"queueId": "0"}, sendHeader{}, `no topic (field "topic")`},
		{"bad queue", map[string]string{"b": "T", "e": "x"}, sendHeader{}, `queue id (field "e") = "x"`},
		{"bad batch", map[string]string{"topic": "T", "queueId": "1", "batch": "maybe"}, sendHeader{}, `batch flag (field "batch") = "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSendHeader(tt.ext)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseSendHeader() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseSendHeader() error = %v", err)
			}
			if got != tt.want {
				t.Errorf("parseSendHeader() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// encodeBatchMessage lays a message out as the client's Message.Marshal does.
func encodeBatchMessage(body []byte, props string) []byte {
	total := 20 + len(body) + 2 + len(props)
	b := binary.BigEndian.AppendUint32(nil, uint32(total))
	b = binary.BigEndian.AppendUint32(b, 0) // magic
	b = binary.BigEndian.AppendUint32(b, 0) // body CRC
	b = binary.BigEndian.AppendUint32(b, 0) // flag
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(props)))
	return append(b, props...)
}

func TestDecodeBatch(t *testing.T) {
	m1 := encodeBatchMessage([]byte("one"), "KEYS\x01a b\x02UNIQ_KEY\x01u1\x02")
	m2 := encodeBatchMessage(nil, "TAGS\x01t\x02")
	got, err := decodeBatch(append(append([]byte(nil), m1...), m2...))
	if err != nil {
		t.Fatalf("decodeBatch() error = %v", err)
	}
	want := []Message{
		{UniqKey: "u1", Keys: []string{"a", "b"}, BodySize: 3, Properties: map[string]string{"KEYS": "a b", "UNIQ_KEY": "u1"}},
		{Tags: "t", BodySize: 0, Properties: map[string]string{"TAGS": "t"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeBatch() = %+v, want %+v", got, want)
	}

	bad := []struct {
		name string
		body []byte
	}{
		{"empty", nil},
		{"short", m1[:10]},
		{"total size past the end", m1[:len(m1)-1]},
		{"body size past total", func() []byte { b := append([]byte(nil), m1...); b[19] = 200; return b }()},
		{"properties size wrong", func() []byte { b := append([]byte(nil), m1...); b[24] = 1; return b }()},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeBatch(tt.body); err == nil {
				t.Errorf("decodeBatch(%s) error = nil, want one", tt.name)
			}
		})
	}
}

func TestEncodeRoute(t *testing.T) {
	r := Route{
		Queues: []QueueData{{BrokerName: "b1", ReadQueueNums: 4, WriteQueueNums: 2, Perm: PermReadWrite}},
		Brokers: []BrokerData{{Cluster: "c", BrokerName: "b1", Addrs: map[int64]string{
			1: "127.0.0.1:2", MasterID: "127.0.0.1:1",
		}}},
	}
	const want = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:1",1:"127.0.0.1:2"},"brokerName":"b1","cluster":"c"}],` +
		`"filterServerTable":{},"queueDatas":[{"brokerName":"b1","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":2}]}`
	if got := string(encodeRoute(r)); got != want {
		t.Errorf("encodeRoute() = %s, want %s", got, want)
	}
	r.OrderTopicConf = "b1:4"
	if got := string(encodeRoute(r)); !strings.Contains(got, `"orderTopicConf":"b1:4"`) {
		t.Errorf("encodeRoute() = %s, want an orderTopicConf field", got)
	}
}
