// Package readme holds the test that keeps README.md, docs/*.md and the
// nested modules' README.md files (kgolearner/state/README.md) true: every
// relative link resolves, every Go block equals the compiled source it
// mirrors, every shell example prints what the command prints now, and
// every fuzzing command there or in a Go comment picks exactly one fuzz
// target (go test will not fuzz two).
//
// A fenced block is checked by its form:
//
//   - A block preceded by <!-- mirror: FILE [FUNC] [from "A"] [to "B"] --> must
//     equal FILE (a path from the repository root), or the body of the Go
//     function FUNC ("Name" or "Type.Method") in it, one tab removed; from
//     and to cut it to the lines from the first one starting with A to the
//     next one starting with B (leading white space ignored), dedented.
//   - A block whose first line starts with "$ " is a transcript: each "$ "
//     line is a command, the lines after it are its output. "go run
//     ./cmd/learner ARGS" runs the command built from this repository (stdin
//     from a <<'EOF' here-document) and must exit 0 printing exactly those
//     lines; "go get M" must name the root module; "go test ..." must be a
//     command .ci/run runs; "bash .ci/run" must exist.
//   - In README.md every block must be one of these; in docs/ and the modules'
//     READMEs other blocks (commands too slow for a test, file formats,
//     sketches) are left alone.
//
// go test ./internal/readme -update rewrites mirrored blocks and command
// outputs from what the sources and commands give now; review the diff.
package readme
