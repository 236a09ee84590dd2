// Package clitest runs the learner command's script tests. It is a module of
// its own so that the core module's go.mod keeps to its two dependencies
// (testify and golang.org/x/exp): testscript, the Go ecosystem's tool for
// command-line tests, comes from github.com/rogpeppe/go-internal.
package clitest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the files the scripts in testdata compare output with")

// bin is the directory holding the learner binary the scripts run.
var bin string

// TestMain builds the learner command once, from this checkout, so the
// scripts run it as a separate process, as a user would.
func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "learner-clitest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	// -C: built in the root module, so this works inside and outside go.work.
	build := exec.Command("go", "build", "-C", "../../..", "-o", filepath.Join(dir, "learner"), "./cmd/learner")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "clitest: building learner:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestScripts runs the command-line tests in testdata: each script runs
// learner and checks its exit status, standard output and standard error,
// like the go command's own tests. Besides testscript's commands,
//
//	status CODE COMMAND [ARGS...]
//
// runs COMMAND as exec does and fails unless it exits with CODE, and the
// condition [int64] holds where int has 64 bits (numbers past int32 parse).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"status": cmdStatus},
		Condition: func(cond string) (bool, error) {
			if cond == "int64" {
				return strconv.IntSize == 64, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status CODE COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}
