package readme

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite mirrored blocks and command outputs in README.md, docs/*.md and the modules' READMEs")

// root is the repository root, relative to this package's directory.
const root = "../.."

// pages are the Markdown files checked, relative to root; README.md first,
// then docs/*.md and the nested modules' READMEs, which a newcomer reaches
// from README.md as readily as docs/ and whose links rot the same way.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		require.NoError(t, err)
		files = append(files, filepath.ToSlash(rel))
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "README.md" || path == filepath.Join(root, "README.md") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err == nil {
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	require.NoError(t, err)
	return files
}

// TestReadmeLength keeps the README the front door it is meant to be.
func TestReadmeLength(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	n := strings.Count(string(src), "\n")
	assert.LessOrEqual(t, n, 250, "README.md has %d lines, want at most 250: move depth to docs/", n)
}

// TestLinks checks that every relative link of every page points at an
// existing file, and every #anchor at a heading of the page it names.
func TestLinks(t *testing.T) {
	for _, page := range pages(t) {
		p := readPage(t, page)
		for _, l := range p.links {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(l.target, "#")
			file := page
			if path != "" {
				file = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", page, l.line, l.target, file)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				t.Errorf("%s:%d: link %q: anchors are checked only into Markdown files", page, l.line, l.target)
				continue
			}
			if !readPage(t, file).anchors[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, l.line, l.target, file, anchor)
			}
		}
	}
}

// TestBlocks checks every fenced block as the package documentation says,
// and with -update rewrites mirrored blocks and command outputs.
func TestBlocks(t *testing.T) {
	for _, page := range pages(t) {
		t.Run(page, func(t *testing.T) {
			p := readPage(t, page)
			changed := false
			for i := range p.blocks {
				b := &p.blocks[i]
				var got []string
				switch {
				case strings.HasPrefix(b.directive, "mirror:"):
					got = mirror(t, page, b)
				case len(b.lines) > 0 && strings.HasPrefix(b.lines[0], "$ "):
					got = transcript(t, page, b)
				case page == "README.md":
					t.Errorf("%s:%d: block is neither mirrored nor a transcript; every README example must be checked", page, b.line)
					continue
				default:
					continue
				}
				if got == nil || equal(got, b.lines) {
					continue
				}
				if *update {
					b.lines, changed = got, true
					continue
				}
				t.Errorf("%s:%d: block differs from its source or command (go test ./internal/readme -update rewrites it)\nshown:\n%s\nsource or command gives:\n%s",
					page, b.line, strings.Join(b.lines, "\n"), strings.Join(got, "\n"))
			}
			if changed {
				require.NoError(t, os.WriteFile(filepath.Join(root, page), []byte(p.format()), 0o644))
			}
		})
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// page is a Markdown file cut into its parts.
type page struct {
	lines   []string
	blocks  []block
	links   []link
	anchors map[string]bool
}

// block is a fenced code block: its content is lines[start:start+orig] of
// the page; lines is that content, or its replacement under -update.
type block struct {
	line      int    // line number of the opening fence
	directive string // the HTML comment on the line before the fence, without <!-- -->
	start     int    // index of the first content line
	orig      int    // number of content lines in the file
	lines     []string
}

type link struct {
	line   int
	target string
}

var (
	linkRE     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	anchorDrop = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

func readPage(t *testing.T, name string) *page {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, name))
	require.NoError(t, err)
	p := &page{lines: strings.Split(strings.TrimSuffix(string(src), "\n"), "\n"), anchors: map[string]bool{}}
	seen := map[string]int{}
	for i := 0; i < len(p.lines); i++ {
		l := p.lines[i]
		if strings.HasPrefix(l, "```") {
			b := block{line: i + 1, start: i + 1}
			if i > 0 {
				prev := strings.TrimSpace(p.lines[i-1])
				if strings.HasPrefix(prev, "<!--") && strings.HasSuffix(prev, "-->") {
					b.directive = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(prev, "<!--"), "-->"))
				}
			}
			for i++; i < len(p.lines) && !strings.HasPrefix(p.lines[i], "```"); i++ {
				b.lines = append(b.lines, p.lines[i])
			}
			require.Less(t, i, len(p.lines), "%s:%d: unclosed code block", name, b.line)
			b.orig = len(b.lines)
			p.blocks = append(p.blocks, b)
			continue
		}
		if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && strings.HasPrefix(l, "#") {
			a := anchor(h)
			if n := seen[a]; n > 0 {
				p.anchors[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(l, ""), -1) {
			p.links = append(p.links, link{line: i + 1, target: m[1]})
		}
	}
	return p
}

// anchor is GitHub's anchor of a heading: lower case, punctuation (backticks
// included) dropped, spaces to hyphens. Repeats get "-1", "-2" in readPage.
func anchor(heading string) string {
	return strings.ReplaceAll(anchorDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), ""), " ", "-")
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Two commands":          "two-commands",
		"With Kafka (franz-go)": "with-kafka-franz-go",
		"The simulator: `go run ./cmd/learner simulate`": "the-simulator-go-run-cmdlearner-simulate",
		"Side by side with franz-go":                     "side-by-side-with-franz-go",
		"What's new, 0.5x-2x":                            "whats-new-05x-2x",
	} {
		assert.Equal(t, want, anchor(heading), "anchor(%q)", heading)
	}
}

// format puts the page back together with its blocks' current lines.
func (p *page) format() string {
	var out []string
	next := 0
	for _, b := range p.blocks {
		out = append(out, p.lines[next:b.start]...)
		out = append(out, b.lines...)
		next = b.start + b.orig
	}
	out = append(out, p.lines[next:]...)
	return strings.Join(out, "\n") + "\n"
}
