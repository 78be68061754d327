package remotingtest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Message property names read from send requests (RocketMQ's MessageConst).
const (
	// PropertyKeys holds a message's keys, separated by spaces.
	PropertyKeys = "KEYS"
	// PropertyTags holds a message's tag.
	PropertyTags = "TAGS"
	// PropertyUniqKey holds the client-made unique message id that the Go
	// client reuses on every retry of the same message.
	PropertyUniqKey = "UNIQ_KEY"
)

// Separators of the properties string: name\x01value\x02name\x01value\x02...
const (
	nameValueSeparator = '\x01'
	propertySeparator  = '\x02'
)

// Message is what a broker read of one message in a send request.
// Its slices and map are shared by every copy of the log: read only.
type Message struct {
	// UniqKey is the UNIQ_KEY property ("" when absent, as in a batch's
	// messages sent by the Go client).
	UniqKey string
	// Keys are the KEYS property split at spaces.
	Keys []string
	// Tags is the TAGS property.
	Tags string
	// BodySize is the message body's length in bytes (compressed, if the
	// client compressed it).
	BodySize int
	// Properties are all the message's properties.
	Properties map[string]string
}

// parseProperties decodes RocketMQ's properties string. Entries without the
// name/value separator are ignored, as RocketMQ does.
func parseProperties(s string) map[string]string {
	props := make(map[string]string)
	for _, item := range strings.Split(s, string(propertySeparator)) {
		name, value, ok := strings.Cut(item, string(nameValueSeparator))
		if ok && name != "" {
			props[name] = value
		}
	}
	return props
}

func messageOf(props map[string]string, bodySize int) Message {
	var keys []string
	if k := props[PropertyKeys]; k != "" {
		keys = strings.Fields(k)
	}
	return Message{
		UniqKey:    props[PropertyUniqKey],
		Keys:       keys,
		Tags:       props[PropertyTags],
		BodySize:   bodySize,
		Properties: props,
	}
}

// sendHeader is the part of a send request header a broker uses.
type sendHeader struct {
	group      string
	topic      string
	queueID    int
	properties string
	batch      bool
}

// v1 and v2 field names of SendMessageRequestHeader.
var (
	sendHeaderV1 = [...]string{"producerGroup", "topic", "queueId", "properties", "batch"}
	sendHeaderV2 = [...]string{"a", "b", "e", "i", "m"}
)

// parseSendHeader reads a send request's ext fields. The V2 layout is
// recognised by its topic field "b", whatever the request code, as a broker
// decodes SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE alike.
func parseSendHeader(ext map[string]string) (sendHeader, error) {
	names := sendHeaderV1
	if _, ok := ext["b"]; ok {
		names = sendHeaderV2
	}
	h := sendHeader{group: ext[names[0]], topic: ext[names[1]], properties: ext[names[3]]}
	if h.topic == "" {
		return h, fmt.Errorf("send request names no topic (field %q)", names[1])
	}
	q, err := strconv.Atoi(ext[names[2]])
	if err != nil {
		return h, fmt.Errorf("send request queue id (field %q) = %q: not an integer", names[2], ext[names[2]])
	}
	h.queueID = q
	if v, ok := ext[names[4]]; ok {
		if h.batch, err = strconv.ParseBool(v); err != nil {
			return h, fmt.Errorf("send request batch flag (field %q) = %q: not a boolean", names[4], v)
		}
	}
	return h, nil
}

// decodeBatch splits a batch body into its messages. Each is laid out as
// MessageDecoder.encodeMessage writes it: int32 total size, int32 magic code,
// int32 body CRC, int32 flag, int32 body size, body, int16 properties size,
// properties.
func decodeBatch(body []byte) ([]Message, error) {
	var msgs []Message
	for off := 0; off < len(body); {
		rest := body[off:]
		if len(rest) < 22 {
			return nil, fmt.Errorf("batch message %d: %d bytes left, a message needs at least 22", len(msgs), len(rest))
		}
		total := int(int32(binary.BigEndian.Uint32(rest)))
		if total < 22 || total > len(rest) {
			return nil, fmt.Errorf("batch message %d: total size %d outside [22, %d]", len(msgs), total, len(rest))
		}
		m := rest[:total]
		bodySize := int(int32(binary.BigEndian.Uint32(m[16:])))
		if bodySize < 0 || 20+bodySize+2 > total {
			return nil, fmt.Errorf("batch message %d: body size %d does not fit its total size %d", len(msgs), bodySize, total)
		}
		propSize := int(binary.BigEndian.Uint16(m[20+bodySize:]))
		if 20+bodySize+2+propSize != total {
			return nil, fmt.Errorf("batch message %d: properties size %d does not fit its total size %d", len(msgs), propSize, total)
		}
		props := parseProperties(string(m[22+bodySize:]))
		msgs = append(msgs, messageOf(props, bodySize))
		off += total
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("batch body holds no message")
	}
	return msgs, nil
}

// heartbeat is the part of HeartbeatData a broker records.
type heartbeat struct {
	ClientID  string `json:"clientID"`
	Producers []struct {
		GroupName string `json:"groupName"`
	} `json:"producerDataSet"`
	Consumers []struct {
		GroupName string `json:"groupName"`
	} `json:"consumerDataSet"`
}

// groups lists the heartbeat's producer groups, then its consumer groups.
func (h *heartbeat) groups() []string {
	var out []string
	for _, p := range h.Producers {
		out = append(out, p.GroupName)
	}
	for _, c := range h.Consumers {
		out = append(out, c.GroupName)
	}
	return out
}

func parseHeartbeat(body []byte) (heartbeat, error) {
	var h heartbeat
	if err := json.Unmarshal(body, &h); err != nil {
		return h, fmt.Errorf("heartbeat body: %w", err)
	}
	return h, nil
}
