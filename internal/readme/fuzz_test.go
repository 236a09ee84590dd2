package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	// fuzzFlagRE finds the pattern given to go test's fuzz flag, quoted or not.
	fuzzFlagRE   = regexp.MustCompile("-fuzz[= ]('[^']*'|\"[^\"]*\"|[^\\s`]+)")
	fuzzTargetRE = regexp.MustCompile(`^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
)

// TestFuzzCommands checks the fuzzing commands the pages and the Go files'
// comments show: go test will not fuzz when its pattern matches more than
// one target of the package ("-fuzz matches more than one fuzz test"), so
// every pattern must match exactly one target of the repository. Names
// that begin others' (FuzzAssign, FuzzAssignIndexed) need ^ and $.
func TestFuzzCommands(t *testing.T) {
	var targets []string
	type source struct {
		file  string
		lines []string
	}
	var sources []source
	for _, page := range pages(t) {
		sources = append(sources, source{page, readPage(t, page).lines})
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		var comments []string
		for _, l := range strings.Split(string(src), "\n") {
			if m := fuzzTargetRE.FindStringSubmatch(l); m != nil {
				targets = append(targets, m[1])
			}
			if c, ok := strings.CutPrefix(strings.TrimSpace(l), "//"); ok {
				comments = append(comments, c)
			} else {
				comments = append(comments, "")
			}
		}
		sources = append(sources, source{filepath.ToSlash(rel), comments})
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, targets, "no fuzz target found")

	checked := 0
	for _, s := range sources {
		for i, l := range s.lines {
			if !strings.Contains(l, "go test") {
				continue
			}
			for _, m := range fuzzFlagRE.FindAllStringSubmatch(l, -1) {
				pattern := strings.Trim(m[1], `'"`)
				re, err := regexp.Compile(pattern)
				if err != nil {
					t.Errorf("%s:%d: fuzz pattern %q: %v", s.file, i+1, pattern, err)
					continue
				}
				var matched []string
				for _, name := range targets {
					if re.MatchString(name) {
						matched = append(matched, name)
					}
				}
				if len(matched) != 1 {
					t.Errorf("%s:%d: fuzz pattern %q matches %v, want exactly one fuzz target (anchor it: ^Name$)", s.file, i+1, pattern, matched)
				}
				checked++
			}
		}
	}
	require.NotZero(t, checked, "no fuzzing command found: is the pattern of the flag still recognized?")
}
