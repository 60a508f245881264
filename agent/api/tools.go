package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/ralph-harness/ralph/internal/glob"
	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/internal/tail"
	"github.com/ralph-harness/ralph/internal/textcut"
)

// Bounds on what a tool gives back to the model: every result is cut to
// maxResult bytes, and says so when it was cut.
const (
	maxResult     = 32 << 10
	shellHead     = 8 << 10  // of a command's output, the start kept...
	shellTail     = 22 << 10 // ...and the end, where errors usually are
	readLines     = 2000     // lines read_file shows when no limit is given
	maxLineLen    = 2000     // a longer line is cut
	maxEntries    = 500      // paths list_files shows
	maxMatches    = 200      // lines search shows
	maxSearchFile = 4 << 20  // larger files are not searched
)

// toolDef is a tool as the model is told about it.
type toolDef struct {
	Name        string
	Description string
	Schema      json.RawMessage
	run         func(t *tools, ctx context.Context, args json.RawMessage) (string, error)
}

var defs = []toolDef{
	{
		Name: "shell",
		Description: "Run a shell command with sh -c in the project directory and get its exit status and output (stdout and stderr together). " +
			"Long output is cut in the middle. The command is stopped after timeout_seconds (default 120, at most 600). " +
			"Nothing is interactive: stdin is empty.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"the command, e.g. \"go test ./...\""},` +
			`"timeout_seconds":{"type":"integer","description":"stop the command after this many seconds"}},` +
			`"required":["command"]}`),
		run: (*tools).shell,
	},
	{
		Name: "read_file",
		Description: "Read a text file. Each line is shown after its line number and a tab; the numbers are not part of the file. " +
			"Shows up to 2000 lines from offset (the first line is 1); use offset and limit for other parts of long files.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"the file, relative to the project directory"},` +
			`"offset":{"type":"integer","description":"the first line to show (1-based)"},` +
			`"limit":{"type":"integer","description":"how many lines to show"}},` +
			`"required":["path"]}`),
		run: (*tools).readFile,
	},
	{
		Name:        "write_file",
		Description: "Write a file with the given content, replacing it if it exists; missing directories are created.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"the file, relative to the project directory"},` +
			`"content":{"type":"string","description":"the whole new content"}},` +
			`"required":["path","content"]}`),
		run: (*tools).writeFile,
	},
	{
		Name: "edit_file",
		Description: "Replace an exact string in a file with another. old_string must occur exactly once (include enough surrounding lines to make it unique), " +
			"unless replace_all is true. Match the file's text exactly, indentation included, without read_file's line numbers.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"the file, relative to the project directory"},` +
			`"old_string":{"type":"string","description":"the text to replace"},` +
			`"new_string":{"type":"string","description":"the text to put in its place"},` +
			`"replace_all":{"type":"boolean","description":"replace every occurrence"}},` +
			`"required":["path","old_string","new_string"]}`),
		run: (*tools).editFile,
	},
	{
		Name: "list_files",
		Description: "List a directory (directories end with /), or with pattern, the files under it whose paths match a glob " +
			"such as \"**/*.go\" (** matches any number of directories). The .git directory is left out.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"the directory, relative to the project directory (default: the project directory)"},` +
			`"pattern":{"type":"string","description":"a glob matched against paths relative to path"}}}`),
		run: (*tools).listFiles,
	},
	{
		Name: "search",
		Description: "Search the contents of text files for a regular expression (RE2 syntax, as in Go) and show the matching lines as path:line: text. " +
			"Searches path (a file or a directory, default: the project directory), leaving out .git and binary files.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"the regular expression"},` +
			`"path":{"type":"string","description":"a file or directory, relative to the project directory"},` +
			`"glob":{"type":"string","description":"only files whose names match this glob, e.g. \"*.go\""},` +
			`"ignore_case":{"type":"boolean"}},` +
			`"required":["pattern"]}`),
		run: (*tools).search,
	},
}

func toolDefs() []toolDef { return defs }

func toolNames() []string {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	return names
}

// tools run the model's tool calls, confined to one directory: a path that
// leads outside it, through .. or a symbolic link, is refused.
type tools struct {
	root  string // the directory, symbolic links resolved
	given string // the directory as given, which the model may also name
	// env is the shell's environment: ralph's, without the API key.
	env          []string
	shellTimeout time.Duration
	maxTimeout   time.Duration
}

func newTools(dir string, shellTimeout, maxTimeout time.Duration, hide ...string) (*tools, error) {
	if dir == "" {
		dir = "."
	}
	given, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(given)
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	if shellTimeout <= 0 {
		shellTimeout = 2 * time.Minute
	}
	if maxTimeout <= 0 {
		maxTimeout = 10 * time.Minute
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		hidden := false
		for _, h := range hide {
			hidden = hidden || (h != "" && k == h)
		}
		if !hidden {
			env = append(env, kv)
		}
	}
	return &tools{root: root, given: given, env: env, shellTimeout: shellTimeout, maxTimeout: maxTimeout}, nil
}

// call runs one tool call. Whatever goes wrong — an unknown tool, broken
// arguments, a refused path — is the model's to read and fix.
func (t *tools) call(ctx context.Context, c toolCall) toolResult {
	res := toolResult{CallID: c.ID, Name: c.Name}
	out, err := t.dispatch(ctx, c)
	var failed *failure
	switch {
	case errors.As(err, &failed):
		res.Content, res.IsError = failed.out, true
	case err != nil:
		res.Content, res.IsError = "error: "+err.Error(), true
	default:
		res.Content = out
	}
	res.Content = cut(res.Content, maxResult)
	return res
}

func (t *tools) dispatch(ctx context.Context, c toolCall) (string, error) {
	var def *toolDef
	for i := range defs {
		if defs[i].Name == c.Name {
			def = &defs[i]
		}
	}
	if def == nil {
		return "", fmt.Errorf("there is no tool %q; the tools are %s", c.Name, strings.Join(toolNames(), ", "))
	}
	args, err := objectArgs(c.Args)
	if err != nil {
		return "", fmt.Errorf("%s: %v; send the arguments as one JSON object with the fields the tool's schema names", c.Name, err)
	}
	return def.run(t, ctx, args)
}

// failure is a tool's result that is an error in its own words, such as
// the output of a command that failed.
type failure struct{ out string }

func (f *failure) Error() string { return f.out }

// decode reads a tool's arguments into v.
func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("argument %q: want a %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

// resolve turns a path the model gave into a path inside the root, with
// its symbolic links resolved, or refuses it.
func (t *tools) resolve(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	var abs string
	switch {
	case !filepath.IsAbs(p):
		abs = filepath.Join(t.root, p)
	case within(t.given, filepath.Clean(p)):
		rel, _ := filepath.Rel(t.given, filepath.Clean(p))
		abs = filepath.Join(t.root, rel)
	default:
		abs = filepath.Clean(p)
	}
	if !within(t.root, abs) {
		return "", fmt.Errorf("%s: outside the project directory; only paths inside it can be used", p)
	}
	real, err := realPath(abs, 0)
	if err != nil {
		return "", fmt.Errorf("%s: %v", p, err)
	}
	if !within(t.root, real) {
		return "", fmt.Errorf("%s: leads outside the project directory through a symbolic link; only paths inside it can be used", p)
	}
	return real, nil
}

// realPath resolves the symbolic links of p, also when p, or a part of
// it, does not exist yet: a dangling link is followed to where it points.
func realPath(p string, depth int) (string, error) {
	if depth > 40 {
		return "", errors.New("too many symbolic links")
	}
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		return realPath(target, depth+1)
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	rp, err := realPath(parent, depth+1)
	if err != nil {
		return "", err
	}
	return filepath.Join(rp, filepath.Base(p)), nil
}

// within reports whether p is root or inside it; both are clean and
// absolute.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// rel names a path inside the root for the model.
func (t *tools) rel(p string) string {
	r, err := filepath.Rel(t.root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

func (t *tools) shell(ctx context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Command string  `json:"command"`
		Timeout float64 `json:"timeout_seconds"`
	}
	if err := decode(raw, &args); err != nil {
		return "", err
	}
	if strings.TrimSpace(args.Command) == "" {
		return "", errors.New("command is empty")
	}
	timeout := t.shellTimeout
	if args.Timeout > 0 {
		// Capped before it becomes a Duration, which a huge number of
		// seconds overflows (to a negative one, a timeout at once).
		timeout = time.Duration(min(args.Timeout, t.maxTimeout.Seconds()) * float64(time.Second))
	}
	out := newClip(shellHead, shellTail)
	p, err := proc.Start(ctx, proc.Config{
		Argv:   []string{"sh", "-c", args.Command},
		Dir:    t.root,
		Env:    t.env,
		Stdout: out,
		Stderr: out,
		Grace:  2 * time.Second,
	})
	if err != nil {
		return "", err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut := false
	select {
	case <-p.Done():
	case <-timer.C:
		timedOut = true
		p.Stop()
	}
	code := p.Wait()
	text := out.String()
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	switch {
	case timedOut:
		return "", &failure{out: text + fmt.Sprintf("[timed out after %s: the command was stopped]", timeout)}
	case code != 0:
		return "", &failure{out: text + fmt.Sprintf("[exit status %d]", code)}
	}
	if text == "" {
		return "[exit status 0, no output]", nil
	}
	return text + "[exit status 0]", nil
}

// notFile is why the tools neither read nor write what is at name: a named
// pipe, a device or a socket, which may hold the call for ever.
func notFile(name string) error {
	return fmt.Errorf("%s is not a regular file (a named pipe, a device or a socket): the tools read and write only files", name)
}

func (t *tools) readFile(_ context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := decode(raw, &args); err != nil {
		return "", err
	}
	p, err := t.resolve(args.Path)
	if err != nil {
		return "", err
	}
	// Opened without waiting (a named pipe would hold the open until
	// something wrote to it), and read only when it is a file.
	f, _, err := readbuf.OpenFile(p)
	switch {
	case errors.Is(err, syscall.EISDIR):
		return "", fmt.Errorf("%s is a directory: use list_files", args.Path)
	case errors.Is(err, readbuf.ErrNotRegular):
		return "", notFile(args.Path)
	case err != nil:
		return "", fmt.Errorf("%s: %v", args.Path, why(err))
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(8 << 10); bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("%s is a binary file", args.Path)
	}
	first := max(args.Offset, 1)
	limit := args.Limit
	if limit <= 0 {
		limit = readLines
	}
	var b strings.Builder
	n, shown, last := 0, 0, 0
	full := false
	for {
		line, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %v", args.Path, err)
		}
		n++
		if n < first || shown >= limit || full {
			continue
		}
		entry := fmt.Sprintf("%6d\t%s\n", n, line)
		if b.Len()+len(entry) > maxResult-200 {
			full = true
			continue
		}
		b.WriteString(entry)
		shown++
		last = n
	}
	switch {
	case n == 0:
		return "[the file is empty]", nil
	case shown == 0:
		return "", fmt.Errorf("%s has %d lines: offset %d is past its end", args.Path, n, first)
	case last < n:
		fmt.Fprintf(&b, "[lines %d-%d of %d; read on with offset %d]", first, last, n, last+1)
	}
	return b.String(), nil
}

// readLine reads one line without its line ending, cut to maxLineLen bytes.
func readLine(r *bufio.Reader) (string, error) {
	var line []byte
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		body := chunk
		if err != bufio.ErrBufferFull {
			body = bytes.TrimRight(chunk, "\r\n")
		}
		keep := min(len(body), maxLineLen-len(line))
		line = append(line, body[:keep]...)
		long = long || keep < len(body)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && (err != io.EOF || len(chunk) == 0 && len(line) == 0) {
			return "", err
		}
		s := string(line)
		if long {
			s = strings.ToValidUTF8(s, "") + " [line cut]"
		}
		return s, nil
	}
}

func (t *tools) writeFile(_ context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if err := decode(raw, &args); err != nil {
		return "", err
	}
	if args.Content == nil {
		return "", errors.New("content is missing (to empty a file, send \"\")")
	}
	p, err := t.resolve(args.Path)
	if err != nil {
		return "", err
	}
	if p == t.root {
		return "", fmt.Errorf("%s is the project directory, not a file", args.Path)
	}
	mode := fs.FileMode(0o644)
	existed := false
	if fi, err := os.Stat(p); err == nil {
		if fi.IsDir() {
			return "", fmt.Errorf("%s is a directory", args.Path)
		}
		if !fi.Mode().IsRegular() {
			return "", notFile(args.Path)
		}
		mode, existed = fi.Mode().Perm(), true
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("%s: %v", args.Path, err)
	}
	if err := os.WriteFile(p, []byte(*args.Content), mode); err != nil {
		return "", fmt.Errorf("%s: %v", args.Path, why(err))
	}
	verb := "created"
	if existed {
		verb = "wrote"
	}
	return fmt.Sprintf("%s %s (%d bytes)", verb, t.rel(p), len(*args.Content)), nil
}

func (t *tools) editFile(_ context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Path       string  `json:"path"`
		Old        *string `json:"old_string"`
		New        *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	}
	if err := decode(raw, &args); err != nil {
		return "", err
	}
	switch {
	case args.Old == nil || *args.Old == "":
		return "", errors.New("old_string is empty: give the exact text to replace (use write_file to create a file)")
	case args.New == nil:
		return "", errors.New("new_string is missing")
	case *args.Old == *args.New:
		return "", errors.New("old_string and new_string are the same: nothing to change")
	}
	p, err := t.resolve(args.Path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %v", args.Path, why(err))
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory", args.Path)
	}
	if !fi.Mode().IsRegular() {
		return "", notFile(args.Path)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("%s: %v", args.Path, why(err))
	}
	text := string(data)
	n := strings.Count(text, *args.Old)
	switch {
	case n == 0:
		hint := ""
		if strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(*args.Old), " ")) {
			hint = " (it is there with different whitespace: copy the file's indentation and line breaks exactly)"
		}
		return "", fmt.Errorf("old_string was not found in %s%s; read the file and copy the text exactly", args.Path, hint)
	case n > 1 && !args.ReplaceAll:
		return "", fmt.Errorf("old_string occurs %d times in %s: include more of the surrounding text to make it unique, or set replace_all", n, args.Path)
	}
	if args.ReplaceAll {
		text = strings.ReplaceAll(text, *args.Old, *args.New)
	} else {
		text = strings.Replace(text, *args.Old, *args.New, 1)
	}
	if err := os.WriteFile(p, []byte(text), fi.Mode().Perm()); err != nil {
		return "", fmt.Errorf("%s: %v", args.Path, why(err))
	}
	if n == 1 {
		return fmt.Sprintf("edited %s: replaced 1 occurrence", t.rel(p)), nil
	}
	return fmt.Sprintf("edited %s: replaced %d occurrences", t.rel(p), n), nil
}

func (t *tools) listFiles(_ context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
	}
	if err := decode(raw, &args); err != nil {
		return "", err
	}
	if args.Path == "" {
		args.Path = "."
	}
	dir, err := t.resolve(args.Path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%s: %v", args.Path, why(err))
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", args.Path)
	}
	var out []string
	more := false
	if args.Pattern == "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return "", fmt.Errorf("%s: %v", args.Path, why(err))
		}
		for _, e := range entries {
			if len(out) == maxEntries {
				more = true
				break
			}
			name := e.Name()
			if e.IsDir() {
				name += "/"
			} else if e.Type()&fs.ModeSymlink != 0 {
				name += "@"
			}
			out = append(out, name)
		}
	} else {
		pattern := strings.TrimPrefix(path.Clean(filepath.ToSlash(args.Pattern)), "./")
		if err := glob.Valid(pattern); err != nil {
			return "", fmt.Errorf("pattern %q: %v", args.Pattern, err)
		}
		set := glob.Compile(pattern)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // an unreadable corner is passed over
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if p == dir {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			if set.Match(rel) {
				if len(out) == maxEntries {
					more = true
					return filepath.SkipAll
				}
				if d.IsDir() {
					rel += "/"
				}
				out = append(out, rel)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	if len(out) == 0 {
		return "[nothing found]", nil
	}
	s := strings.Join(out, "\n") + "\n"
	if more {
		s += fmt.Sprintf("[only the first %d entries are shown; narrow the pattern]", maxEntries)
	}
	return s, nil
}

func (t *tools) search(_ context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		IgnoreCase bool   `json:"ignore_case"`
	}
	if err := decode(raw, &args); err != nil {
		return "", err
	}
	if args.Pattern == "" {
		return "", errors.New("pattern is empty")
	}
	expr := args.Pattern
	if args.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", fmt.Errorf("pattern: %v", err)
	}
	if args.Path == "" {
		args.Path = "."
	}
	start, err := t.resolve(args.Path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(start); err != nil {
		return "", fmt.Errorf("%s: %v", args.Path, why(err))
	}
	var b strings.Builder
	matches := 0
	more := false
	if args.Glob != "" {
		if err := glob.Valid(args.Glob); err != nil {
			return "", fmt.Errorf("glob %q: %v", args.Glob, err)
		}
	}
	only := glob.Compile(args.Glob)
	err = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symbolic links could lead outside
		}
		rel := t.rel(p)
		if args.Glob != "" {
			subject := d.Name()
			if strings.Contains(args.Glob, "/") {
				subject = rel
			}
			if !only.Match(subject) {
				return nil
			}
		}
		if info, err := d.Info(); err != nil || info.Size() > maxSearchFile {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0 {
			return nil
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			if matches == maxMatches {
				more = true
				return filepath.SkipAll
			}
			matches++
			fmt.Fprintf(&b, "%s:%d: %s\n", rel, i+1, cutLine(strings.TrimRight(line, "\r"), 300))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if matches == 0 {
		return "[no matches]", nil
	}
	if more {
		fmt.Fprintf(&b, "[only the first %d matches are shown; narrow the search]", maxMatches)
	}
	return b.String(), nil
}

func cutLine(s string, n int) string { return textcut.Head(s, n, " [line cut]") }

// cut bounds a tool result, keeping its start and end.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	h, t := textcut.Head(s, n/4, ""), textcut.Tail(s, n-n/4-100)
	return h + fmt.Sprintf("\n[… %d bytes cut …]\n", len(s)-len(h)-len(t)) + t
}

// clip keeps the start and the end of a stream, and counts what is
// between, so that a command's output of any size is held in bounded
// memory.
type clip struct {
	head    []byte
	headMax int
	tail    *tail.Buffer
	total   int64
}

func newClip(head, tailSize int) *clip {
	return &clip{headMax: head, tail: tail.New(tailSize)}
}

func (c *clip) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		c.tail.Write(p)
	}
	return n, nil
}

func (c *clip) String() string {
	head := string(c.head)
	t := c.tail.String()
	skipped := c.total - int64(len(c.head)) - int64(c.tail.Len())
	if skipped <= 0 {
		return strings.ToValidUTF8(head+t, "\uFFFD")
	}
	return strings.ToValidUTF8(head, "") + fmt.Sprintf("\n[… %d bytes of output cut …]\n", skipped) + strings.ToValidUTF8(t, "")
}

// why is the reason of a failed file operation, without the path the
// message names already.
func why(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
