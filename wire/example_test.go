package wire_test

import (
	"errors"
	"fmt"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/wire"
)

func ExampleCodec() {
	a, err := learner.New([]learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}, {ID: "T3"}}, learner.Options{})
	if err != nil {
		panic(err)
	}
	c := wire.NewCodec(a) // build once: every member of the group uses the same tasks
	join, err := c.AppendMember(nil, learner.MemberMetadata{ID: "S4", Learning: []string{"T1"}, Ready: []string{"T1"}, Standby: []string{"T2"}})
	if err != nil {
		panic(err)
	}
	m, err := c.DecodeMember(join)
	fmt.Println(len(join), "bytes:", learner.FormatMember(m), err)

	_, err = c.DecodeMember(join[:12])
	fmt.Println(errors.Is(err, wire.ErrMalformed), err)
	// Output:
	// 25 bytes: S4(assigned: [], revoked: [], learning: [T1], ready: [T1], standby: [T2]) <nil>
	// true wire: decode member metadata: byte 10: ID length: declared 2, but only 1 bytes remain: malformed wire format
}
