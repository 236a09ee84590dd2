package coordinator

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/scenario"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/scripts")

// TestScripts runs the datadriven scripts in testdata/scripts: group
// histories told heartbeat by heartbeat. A script is a sequence of blocks:
//
//	# comments (kept by -update)
//	<command>
//	----
//	<expected output>
//	<blank line>
//
// Commands:
//
//	group tasks=T1,T2 [stateless=T2] [standbys=N] [max-learners=N] [fresh]
//	                   a new coordinator (fresh: FreshGroup), session 10s, heartbeat 3s
//	beat S1 S2 ...     each member heartbeats and applies the response, in order;
//	                   a new ID is a new member
//	lose S1            S1 heartbeats; the response is lost
//	late S1 N          the heartbeat S1 sent N heartbeats ago arrives again
//	ready S1 T1 ...    S1's learners of these tasks have replayed their state
//	leave S1 [within D]  S1 announces that it leaves (by a deadline D from now)
//	crash S1           S1's process dies: it stops everything and sends nothing
//	restart S1 as S1.2 [disk=T1,T2]  S1's process comes back under a new ID,
//	                   with those tasks' state on disk; its join replaces S1
//	wait D             time passes (a Go duration); the coordinator ticks
//	failover           a new coordinator with no state replaces the old one
//	topology T1,T2 [stateless=T2]  the tasks change
//	target             the group's target
//	raw {JSON}         a heartbeat as JSON, from nobody in particular
//
// After every block no task may be active on two members.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no scripts in testdata/scripts")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			sc, err := scenario.ParseAny(string(src))
			require.NoError(t, err, file)
			blocks := sc.Blocks
			s := &script{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), members: map[string]*Member{}, sent: map[string][]Heartbeat{}}
			for i := range blocks {
				b := &blocks[i]
				require.Empty(t, b.Input, "%s:%d: %s: a command is one line, followed by ----", file, b.Line, b.Cmd)
				got := s.run(t, b.Cmd)
				if err := s.safe(); err != nil {
					t.Fatalf("%s:%d: %s: %v", file, b.Line, b.Cmd, err)
				}
				if *update {
					b.Output = got
				} else if got != b.Output {
					t.Errorf("%s:%d: %s\ngot:\n%swant:\n%s", file, b.Line, b.Cmd, got, b.Output)
				}
			}
			if *update {
				require.NoError(t, os.WriteFile(file, []byte(sc.String()), 0o644))
			}
		})
	}
}

type script struct {
	tasks   []learner.Task
	cfg     Config
	c       *Coordinator
	now     time.Time
	members map[string]*Member
	sent    map[string][]Heartbeat
}

func (s *script) run(t *testing.T, cmd string) string {
	f := strings.Fields(cmd)
	var out strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	switch f[0] {
	case "group":
		s.tasks, s.cfg = nil, Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second}
		var stateless []string
		for _, arg := range f[1:] {
			k, v, _ := strings.Cut(arg, "=")
			switch k {
			case "tasks":
				for _, id := range strings.Split(v, ",") {
					s.tasks = append(s.tasks, learner.Task{ID: id, Stateful: true})
				}
			case "stateless":
				stateless = strings.Split(v, ",")
			case "standbys":
				fmt.Sscan(v, &s.cfg.Options.Standbys)
			case "max-learners":
				fmt.Sscan(v, &s.cfg.Options.MaxLearners)
			case "fresh":
				s.cfg.FreshGroup = true
			default:
				t.Fatalf("group: unknown argument %q", arg)
			}
		}
		for i := range s.tasks {
			s.tasks[i].Stateful = !slices.Contains(stateless, s.tasks[i].ID)
		}
		c, err := New(s.tasks, s.cfg)
		if err != nil {
			p("error: %v", err)
			break
		}
		s.c = c
	case "beat":
		for _, id := range f[1:] {
			s.beat(id, true, p)
		}
	case "lose":
		s.beat(f[1], false, p)
	case "late":
		var n int
		fmt.Sscan(f[2], &n)
		hs := s.sent[f[1]]
		hb := hs[len(hs)-1-n]
		r, err := s.c.Heartbeat(s.now, hb)
		if err != nil {
			p("late %s@%d: error: %v", hb.MemberID, hb.Epoch, err)
			break
		}
		p("late %s@%d: answered with %s (the member no longer waits for it)", hb.MemberID, hb.Epoch, formatResponse(r))
	case "ready":
		for _, task := range f[2:] {
			if !s.members[f[1]].Restored(task) {
				p("%s does not learn %s", f[1], task)
			}
		}
	case "leave":
		var deadline time.Time
		if len(f) == 4 && f[2] == "within" {
			d, err := time.ParseDuration(f[3])
			require.NoError(t, err, cmd)
			deadline = s.now.Add(d)
		}
		s.members[f[1]].Leave(deadline)
	case "crash":
		s.members[f[1]].Stop()
		delete(s.members, f[1])
	case "restart":
		// restart OLD as NEW [disk=T1,T2]: OLD's process (crashed) comes
		// back as NEW with the listed tasks' state caught up on disk.
		m, err := RestartOf(f[3], f[1])
		if err != nil {
			p("error: %v", err)
			break
		}
		if len(f) > 4 {
			for _, task := range strings.Split(strings.TrimPrefix(f[4], "disk="), ",") {
				m.SetLag(task, 0)
			}
		}
		s.members[f[3]] = m
	case "wait":
		d, err := time.ParseDuration(f[1])
		require.NoError(t, err, cmd)
		s.now = s.now.Add(d)
		if gone := s.c.Tick(s.now); len(gone) > 0 {
			p("session expired: %v", gone)
		}
		for _, id := range sortedIDs(s.members) {
			if s.members[id].ShouldShutdown(s.now) {
				s.depart(id, "its deadline passed", p)
			}
		}
	case "failover":
		cfg := s.cfg
		cfg.FreshGroup = false
		c, err := New(s.tasks, cfg)
		require.NoError(t, err)
		s.c = c
	case "topology":
		s.tasks = nil
		var stateless []string
		if len(f) > 2 {
			stateless = strings.Split(strings.TrimPrefix(f[2], "stateless="), ",")
		}
		for _, id := range strings.Split(f[1], ",") {
			s.tasks = append(s.tasks, learner.Task{ID: id, Stateful: !slices.Contains(stateless, id)})
		}
		if err := s.c.SetTopology(s.tasks); err != nil {
			p("error: %v", err)
		}
	case "target":
		for _, a := range s.c.Target() {
			p("%s", learner.FormatAssignment(a))
		}
	case "raw":
		var hb Heartbeat
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(cmd, "raw ")), &hb), cmd)
		r, err := s.c.Heartbeat(s.now, hb)
		if err != nil {
			p("error: %v", err)
			break
		}
		p("%s", formatResponse(r))
	default:
		t.Fatalf("unknown command %q", cmd)
	}
	return out.String()
}

// beat sends id's heartbeat; with apply, the member applies the response.
func (s *script) beat(id string, apply bool, p func(string, ...any)) {
	m := s.members[id]
	if m == nil {
		var err error
		if m, err = NewMember(id); err != nil {
			p("%s: error: %v", id, err)
			return
		}
		s.members[id] = m
	}
	hb := m.Heartbeat()
	s.sent[id] = append(s.sent[id], hb)
	r, err := s.c.Heartbeat(s.now, hb)
	if err != nil {
		p("%s: error: %v", id, err)
		return
	}
	if !apply {
		p("%s: lost %s", id, formatResponse(r))
		return
	}
	ch, err := m.Apply(r)
	if err != nil {
		p("%s: apply: error: %v", id, err)
		return
	}
	line, sep := formatResponse(r), " |"
	for _, l := range []struct {
		name  string
		tasks []string
	}{{"start", ch.StartActive}, {"stop", ch.StopActive}, {"learn", ch.StartLearning}, {"unlearn", ch.StopLearning}, {"standby", ch.StartStandby}, {"unstandby", ch.StopStandby}} {
		if len(l.tasks) > 0 {
			line += fmt.Sprintf("%s %s %v", sep, l.name, l.tasks)
			sep = ","
		}
	}
	p("%s", line)
	if ch.Shutdown {
		s.depart(id, "it has handed everything over", p)
	}
}

func (s *script) depart(id, why string, p func(string, ...any)) {
	m := s.members[id]
	m.Stop()
	delete(s.members, id)
	p("%s stops everything and leaves: %s", id, why)
	if _, err := s.c.Heartbeat(s.now, m.LeaveHeartbeat()); err != nil {
		p("%s: leave: error: %v", id, err)
	}
}

func formatResponse(r Response) string {
	s := fmt.Sprintf("%s@%d active %v learning %v", r.MemberID, r.Epoch, r.Active, r.Learning)
	if len(r.Standby) > 0 {
		s += fmt.Sprintf(" standby %v", r.Standby)
	}
	if r.Shutdown {
		s += " shutdown"
	}
	if r.HeartbeatInterval < 3*time.Second {
		s += fmt.Sprintf(" (again in %v)", r.HeartbeatInterval)
	}
	return s
}

func sortedIDs(m map[string]*Member) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// safe checks that no task is active on two of the script's members.
func (s *script) safe() error {
	owner := map[string]string{}
	for _, id := range sortedIDs(s.members) {
		for _, t := range s.members[id].Active() {
			if o, dup := owner[t]; dup {
				return fmt.Errorf("task %s active on %s and %s", t, o, id)
			}
			owner[t] = id
		}
	}
	return nil
}
