package main

import (
	"errors"
	"flag"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the files the scripts in testdata/script compare output with")

// TestMain lets the scripts run this package's main as the command learner,
// a separate process as a user would run it.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"learner": main})
}

// TestScripts runs the command-line tests in testdata/script: each script
// runs learner and checks its exit status, standard output and standard
// error, like the go command's own tests. Besides testscript's commands,
//
//	status CODE COMMAND [ARGS...]
//
// runs COMMAND as exec does and fails unless it exits with CODE.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Cmds:          map[string]func(*testscript.TestScript, bool, []string){"status": cmdStatus},
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
