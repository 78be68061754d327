package remotingtest

import "fmt"

// Request codes the servers understand (RocketMQ's RequestCode values).
const (
	// CodeSendMessage is SEND_MESSAGE: one message, long header field names.
	CodeSendMessage int16 = 10
	// CodeGetMaxOffset is GET_MAX_OFFSET: the next offset of a topic's
	// queue (header fields topic, queueId), asked by the reference's
	// detector and by rocketmqgo.RemotingDetector.
	CodeGetMaxOffset int16 = 30
	// CodeHeartbeat is HEART_BEAT: a client announces its producer and
	// consumer groups to a broker.
	CodeHeartbeat int16 = 34
	// CodeUnregisterClient is UNREGISTER_CLIENT: a client leaves a broker.
	CodeUnregisterClient int16 = 35
	// CodeGetRouteInfoByTopic is GET_ROUTEINFO_BY_TOPIC, asked of a name server.
	CodeGetRouteInfoByTopic int16 = 105
	// CodeSendMessageV2 is SEND_MESSAGE_V2: one message, one-letter header
	// field names.
	CodeSendMessageV2 int16 = 310
	// CodeSendBatchMessage is SEND_BATCH_MESSAGE: several messages of one
	// topic in one body, with the V2 header.
	CodeSendBatchMessage int16 = 320
)

// Response codes the servers answer with (RocketMQ's ResponseCode values).
// Any other int16 can be injected with Fault.Code.
const (
	// CodeSuccess is SUCCESS.
	CodeSuccess int16 = 0
	// CodeSystemError is SYSTEM_ERROR; the Go client retries a send on it.
	CodeSystemError int16 = 1
	// CodeSystemBusy is SYSTEM_BUSY; the Go client v2.1.2 does not retry it.
	CodeSystemBusy int16 = 2
	// CodeRequestCodeNotSupported is REQUEST_CODE_NOT_SUPPORTED, the answer
	// to every request code a server does not speak.
	CodeRequestCodeNotSupported int16 = 3
	// CodeFlushDiskTimeout is FLUSH_DISK_TIMEOUT: stored, not yet flushed.
	CodeFlushDiskTimeout int16 = 10
	// CodeSlaveNotAvailable is SLAVE_NOT_AVAILABLE: stored, no slave.
	CodeSlaveNotAvailable int16 = 11
	// CodeFlushSlaveTimeout is FLUSH_SLAVE_TIMEOUT: stored, slave late.
	CodeFlushSlaveTimeout int16 = 12
	// CodeServiceNotAvailable is SERVICE_NOT_AVAILABLE; retried by the client.
	CodeServiceNotAvailable int16 = 14
	// CodeNoPermission is NO_PERMISSION; retried by the client.
	CodeNoPermission int16 = 16
	// CodeTopicNotExist is TOPIC_NOT_EXIST: the name server's answer for a
	// topic it has no route for; retried by the client when a broker says it.
	CodeTopicNotExist int16 = 17
)

// isSend reports whether code is one of the send-message request codes.
func isSend(code int16) bool {
	return code == CodeSendMessage || code == CodeSendMessageV2 || code == CodeSendBatchMessage
}

// storedCode reports whether a send answered with code was stored all the same.
func storedCode(code int16) bool {
	return code == CodeFlushDiskTimeout || code == CodeSlaveNotAvailable || code == CodeFlushSlaveTimeout
}

var requestNames = map[int16]string{
	CodeSendMessage:         "SEND_MESSAGE",
	CodeGetMaxOffset:        "GET_MAX_OFFSET",
	CodeHeartbeat:           "HEART_BEAT",
	CodeUnregisterClient:    "UNREGISTER_CLIENT",
	CodeGetRouteInfoByTopic: "GET_ROUTEINFO_BY_TOPIC",
	CodeSendMessageV2:       "SEND_MESSAGE_V2",
	CodeSendBatchMessage:    "SEND_BATCH_MESSAGE",
}

var responseNames = map[int16]string{
	CodeSuccess:                 "SUCCESS",
	CodeSystemError:             "SYSTEM_ERROR",
	CodeSystemBusy:              "SYSTEM_BUSY",
	CodeRequestCodeNotSupported: "REQUEST_CODE_NOT_SUPPORTED",
	CodeFlushDiskTimeout:        "FLUSH_DISK_TIMEOUT",
	CodeSlaveNotAvailable:       "SLAVE_NOT_AVAILABLE",
	CodeFlushSlaveTimeout:       "FLUSH_SLAVE_TIMEOUT",
	CodeServiceNotAvailable:     "SERVICE_NOT_AVAILABLE",
	CodeNoPermission:            "NO_PERMISSION",
	CodeTopicNotExist:           "TOPIC_NOT_EXIST",
}

// CodeName returns RocketMQ's name for a request code the servers speak, or
// "code N" for any other.
func CodeName(code int16) string {
	if n, ok := requestNames[code]; ok {
		return n
	}
	return fmt.Sprintf("code %d", code)
}

// ResponseName returns RocketMQ's name for a response code listed in this
// package, or "code N" for any other.
func ResponseName(code int16) string {
	if n, ok := responseNames[code]; ok {
		return n
	}
	return fmt.Sprintf("code %d", code)
}
