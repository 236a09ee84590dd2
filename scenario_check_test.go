package learner

import "fmt"

// checkInvariants is a stop-gap until the full invariant checker lands: it
// checks rules 1, 2, 3 and 6 of the core issue.
func checkInvariants(a *Assignor, in []MemberMetadata, out []Assignment) []string {
	var v []string
	if len(in) == 0 {
		return nil
	}
	owners := map[string][]string{}
	learners := map[string]string{}
	for _, o := range out {
		held := map[string]string{}
		for _, l := range []struct {
			name string
			ids  []string
		}{{"assigned", o.Assigned}, {"learning", o.Learning}, {"standby", o.Standby}} {
			for _, id := range l.ids {
				if prev, dup := held[id]; dup {
					v = append(v, fmt.Sprintf("member %s holds %s as %s and %s", o.MemberID, id, prev, l.name))
				}
				held[id] = l.name
			}
		}
		for _, id := range o.Assigned {
			owners[id] = append(owners[id], o.MemberID)
		}
		for _, id := range o.Learning {
			learners[id] = o.MemberID
		}
	}
	for _, t := range a.tasks {
		if len(owners[t.ID]) != 1 {
			v = append(v, fmt.Sprintf("task %s has active owners %v, want exactly one", t.ID, owners[t.ID]))
		}
	}
	byID := map[string]Assignment{}
	for _, o := range out {
		byID[o.MemberID] = o
	}
	staying := 0
	for _, m := range in {
		if !m.Leaving {
			staying++
		}
	}
	reported := map[string]int{} // learners per task in the input: competing ones may lose
	for _, m := range in {
		for _, id := range m.Learning {
			reported[id]++
		}
	}
	for _, m := range in {
		o := byID[m.ID]
		ready := map[string]bool{}
		for _, id := range m.Ready {
			ready[id] = true
		}
		for _, id := range m.Learning {
			if m.Leaving || a.index.lookup(id) == none || reported[id] > 1 {
				continue
			}
			keeps := learners[id] == m.ID || contains(o.Assigned, id)
			if !keeps && learners[id] == "" {
				v = append(v, fmt.Sprintf("member %s: learner of %s dropped", m.ID, id))
			}
			if ready[id] && !contains(o.Assigned, id) && learners[id] == "" {
				v = append(v, fmt.Sprintf("member %s: ready learner of %s not promoted", m.ID, id))
			}
		}
		if m.Leaving && staying > 0 {
			had := map[string]bool{}
			for _, id := range append(append(append([]string(nil), m.Assigned...), m.Revoked...), m.Standby...) {
				had[id] = true
			}
			for _, id := range append(append(append([]string(nil), o.Assigned...), o.Learning...), o.Standby...) {
				if !had[id] {
					v = append(v, fmt.Sprintf("leaving member %s gained %s", m.ID, id))
				}
			}
		}
	}
	return v
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
