package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mirror returns the lines a <!-- mirror: ... --> block must hold, or nil
// after reporting a directive it cannot follow.
func mirror(t *testing.T, page string, b *block) []string {
	t.Helper()
	args, err := splitDirective(strings.TrimPrefix(b.directive, "mirror:"))
	if err != nil || len(args) == 0 {
		t.Errorf("%s:%d: directive %q: want mirror: FILE [FUNC] [from \"A\"] [to \"B\"] (%v)", page, b.line, b.directive, err)
		return nil
	}
	file, args := args[0], args[1:]
	src, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Errorf("%s:%d: mirror: %v", page, b.line, err)
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	if len(args) > 0 && args[0] != "from" && args[0] != "to" {
		if lines, err = funcBody(file, src, args[0]); err != nil {
			t.Errorf("%s:%d: mirror: %v", page, b.line, err)
			return nil
		}
		args = args[1:]
	}
	from, to := 0, len(lines)-1
	for ; len(args) >= 2; args = args[2:] {
		i := from
		for i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), args[1]) {
			i++
		}
		if i == len(lines) {
			t.Errorf("%s:%d: mirror: no line of %s starts with %q", page, b.line, file, args[1])
			return nil
		}
		switch args[0] {
		case "from":
			from = i
		case "to":
			to = i
		default:
			t.Errorf("%s:%d: mirror: want from or to, got %q", page, b.line, args[0])
			return nil
		}
	}
	if len(args) != 0 {
		t.Errorf("%s:%d: mirror: %q lacks its line prefix", page, b.line, args[0])
		return nil
	}
	return dedent(lines[from : to+1])
}

// splitDirective splits on white space, keeping "quoted strings" whole.
func splitDirective(s string) ([]string, error) {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, err
			}
			u, _ := strconv.Unquote(q)
			out, s = append(out, u), s[len(q):]
			continue
		}
		f := strings.Fields(s)[0]
		out, s = append(out, f), s[len(f):]
	}
	return out, nil
}

// funcBody returns the lines between the braces of function name ("F" or
// "T.M") in a Go file.
func funcBody(file string, src []byte, name string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil || funcName(fn) != name {
			continue
		}
		body := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
		return strings.Split(strings.Trim(body, "\n"), "\n"), nil
	}
	return nil, &os.PathError{Op: "find func " + name, Path: file, Err: os.ErrNotExist}
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// dedent removes the leading tabs every non-blank line shares.
func dedent(lines []string) []string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			out[i] = l[common:]
		}
	}
	return out
}
