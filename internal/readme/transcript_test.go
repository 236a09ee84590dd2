package readme

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// transcript runs the commands of a "$ " block and returns the block as it
// should read, their real outputs in place of the shown ones; nil after
// reporting a command it cannot check.
func transcript(t *testing.T, page string, b *block) []string {
	t.Helper()
	var out []string
	for i := 0; i < len(b.lines); {
		line := b.line + 1 + i
		cmd := strings.TrimPrefix(b.lines[i], "$ ")
		out = append(out, b.lines[i])
		i++
		if c, _, found := strings.Cut(cmd, " #"); found { // a shell comment
			cmd = c
		}
		cmd = strings.TrimSpace(cmd)
		var stdin string
		if c, ok := strings.CutSuffix(cmd, "<<'EOF'"); ok {
			cmd = strings.TrimSpace(c)
			start := i
			for i < len(b.lines) && b.lines[i] != "EOF" {
				i++
			}
			if i == len(b.lines) {
				t.Errorf("%s:%d: here-document without EOF", page, line)
				return nil
			}
			stdin = strings.Join(b.lines[start:i], "\n") + "\n"
			out = append(out, b.lines[start:i+1]...)
			i++
		}
		first := i
		for i < len(b.lines) && !strings.HasPrefix(b.lines[i], "$ ") {
			i++
		}
		shown := i - first
		printed, ok := check(t, page, line, cmd, stdin)
		if !ok {
			return nil
		}
		if printed == nil && shown > 0 {
			t.Errorf("%s:%d: %q is not run by the test, so it must show no output", page, line, cmd)
			return nil
		}
		out = append(out, printed...)
	}
	return out
}

// check checks one command and returns the lines it prints (nil for
// commands that are checked without running them).
func check(t *testing.T, page string, line int, cmd, stdin string) ([]string, bool) {
	t.Helper()
	args := strings.Fields(cmd)
	switch {
	case len(args) >= 3 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/learner":
		c := exec.Command(learnerBinary(t), args[3:]...)
		c.Dir, c.Stdin = root, strings.NewReader(stdin)
		var buf bytes.Buffer
		c.Stdout, c.Stderr = &buf, &buf
		if err := c.Run(); err != nil {
			t.Errorf("%s:%d: %s: %v\n%s", page, line, cmd, err, buf.String())
			return nil, false
		}
		return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"), true
	case len(args) == 3 && args[0] == "go" && args[1] == "get":
		mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
		if err != nil || !strings.HasPrefix(string(mod), "module "+args[2]+"\n") {
			t.Errorf("%s:%d: %s: not the root module's path (%v)", page, line, cmd, err)
			return nil, false
		}
	case len(args) >= 2 && args[0] == "go" && args[1] == "test":
		ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
		if err != nil || !ciRuns(string(ci), cmd) {
			t.Errorf("%s:%d: %q is not a command .ci/run runs (%v)", page, line, cmd, err)
			return nil, false
		}
	case cmd == "bash .ci/run":
		if _, err := os.Stat(filepath.Join(root, ".ci", "run")); err != nil {
			t.Errorf("%s:%d: %v", page, line, err)
			return nil, false
		}
	default:
		t.Errorf("%s:%d: no way to check %q; see the package doc for the commands a transcript may use", page, line, cmd)
		return nil, false
	}
	return nil, true
}

// ciRuns reports whether .ci/run runs cmd literally, as "step cmd".
func ciRuns(ci, cmd string) bool {
	for _, l := range strings.Split(ci, "\n") {
		l, _, _ = strings.Cut(l, " #")
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "step ")) == cmd {
			return true
		}
	}
	return false
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
	binDir    string
)

// learnerBinary builds ./cmd/learner once per test run.
func learnerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "readme")
		if buildErr != nil {
			return
		}
		binary = filepath.Join(binDir, "learner")
		c := exec.Command("go", "build", "-o", binary, "./cmd/learner")
		c.Dir = root
		var out []byte
		if out, buildErr = c.CombinedOutput(); buildErr != nil {
			buildErr = &exec.Error{Name: "go build ./cmd/learner: " + string(out), Err: buildErr}
			return
		}
		buildErr = consultSources()
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// consultSources reads every Go file the command is built from. go test
// caches a passing result until a file the test consulted changes, and it
// cannot see what the go build child read: without this, a change to the
// command's code would leave a stale pass in the cache.
func consultSources() error {
	c := exec.Command("go", "list", "-deps", "-f",
		`{{if not .Standard}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}`, "./cmd/learner")
	c.Dir = root
	out, err := c.Output()
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(string(out)) {
		if _, err := os.ReadFile(f); err != nil {
			return err
		}
	}
	return nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
