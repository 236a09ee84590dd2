// Package grouprequest reads which group member a Kafka request is sent
// as: what the fault-injecting tests of kgolearner and of its state runtime
// aim a fault at.
package grouprequest

import "github.com/twmb/franz-go/pkg/kmsg"

// Member returns the member ID a group request is sent as, "" for another
// request or one that names no member.
func Member(req kmsg.Request) string {
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		return req.MemberID
	case *kmsg.SyncGroupRequest:
		return req.MemberID
	case *kmsg.HeartbeatRequest:
		return req.MemberID
	case *kmsg.OffsetCommitRequest:
		return req.MemberID
	case *kmsg.OffsetFetchRequest: // kgo's, after a SyncGroup: v8 and later name the member
		for _, rg := range req.Groups {
			if rg.MemberID != nil {
				return *rg.MemberID
			}
		}
	case *kmsg.LeaveGroupRequest:
		for _, lm := range req.Members { // v3 and later name the members here
			return lm.MemberID
		}
		return req.MemberID
	}
	return ""
}
