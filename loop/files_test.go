package loop

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestProjectFilesRepos: in a git work tree, another repository is listed
// as its directory, whether git tracks it (a submodule, here one not
// checked out: an empty directory) or not (a clone); a tracked file that
// became a directory is not, the files in it are. The guard keeps the
// repositories' names, neither their files nor a copy, and leaves them
// be.
func TestProjectFilesRepos(t *testing.T) {
	root, work := gitRepo(t, map[string]string{"t.txt": "t", "vendor/v.txt": "v"})
	ctx := context.Background()
	id := mustGit(t, work, "rev-parse", "HEAD")
	// --cacheinfo's name is the work tree's.
	mustGit(t, root, "update-index", "--add", "--cacheinfo", "160000,"+id+",work/vendor/sub")
	mustGit(t, work, "init", "-q", "vendor/clone")
	for _, dir := range []string{"vendor/sub", "t.txt"} {
		if err := os.RemoveAll(filepath.Join(work, dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(work, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"vendor/clone/c.txt", "t.txt/x.txt"} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := &Options{Dir: work, Config: Config{Guard: Guard{Protect: []string{"vendor/**", "t.txt"}}}}
	files, err := o.projectFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names, dirs []string
	for _, f := range files {
		names = append(names, f.name)
		if f.info.IsDir() {
			dirs = append(dirs, f.name)
		}
	}
	slices.Sort(names)
	slices.Sort(dirs)
	if want := []string{"t.txt/x.txt", "vendor/clone", "vendor/sub", "vendor/v.txt"}; !slices.Equal(names, want) {
		t.Errorf("projectFiles = %q, want %q", names, want)
	}
	if want := []string{"vendor/clone", "vendor/sub"}; !slices.Equal(dirs, want) {
		t.Errorf("directories listed: %q, want %q", dirs, want)
	}
	s, err := takeFiles(ctx, o, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.repos) != 2 || !s.repos["vendor/clone"] || !s.repos["vendor/sub"] {
		t.Errorf("repos = %v, want vendor/clone and vendor/sub", s.repos)
	}
	if _, ok := s.protected["vendor/v.txt"]; !ok || len(s.protected) != 2 {
		t.Errorf("protected: %d files, want vendor/v.txt and t.txt/x.txt", len(s.protected))
	}
	found, _, _, err := s.guard(ctx, o)
	if err != nil || len(found) != 0 {
		t.Errorf("guard: %q, %v; want nothing", found, err)
	}
	for _, name := range []string{"vendor/clone/c.txt", "vendor/sub"} {
		if _, err := os.Lstat(filepath.Join(work, name)); err != nil {
			t.Errorf("after the guard: %v", err)
		}
	}
}

// TestLiteralDirs: the directories looked in for named pipes are those
// the protect globs name before their first wildcard, the root for a glob
// that begins with one; a glob that names a file names a directory too,
// as in .gitignore (see guardPatterns).
func TestLiteralDirs(t *testing.T) {
	got := literalDirs(guardPatterns([]string{"schema/**", "db/migrations/*.sql", "**/*.proto", "a/b[12]/c", "schema/x.sql"}))
	want := []string{"schema", "db/migrations", "", "a", "schema/x.sql"}
	if !slices.Equal(got, want) {
		t.Errorf("literalDirs = %q, want %q", got, want)
	}
}

// TestWalkFiles: outside git, the project's files are listed in
// filepath.WalkDir's order (by name, a directory's files at its name's
// place), links as themselves and not followed, named pipes too, and
// nothing under .git or node_modules.
func TestWalkFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.b", "a/b.txt", "a/c/d.txt", "a0", ".git/config", "node_modules/x/y.js", "sub/node_modules/z.js", "sub/z.txt"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	var files []fileInfo
	walkFiles(dir, "", &files)
	var got []string
	for _, f := range files {
		got = append(got, f.name+" "+f.info.Mode().Type().String())
	}
	want := []string{"a/b.txt ----------", "a/c/d.txt ----------", "a.b ----------", "a0 ----------", "link L---------", "pipe p---------", "sub/z.txt ----------"}
	if !slices.Equal(got, want) {
		t.Errorf("listed:\n%q\nwant:\n%q", got, want)
	}
	// The same as filepath.WalkDir lists them.
	var walked []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			walked = append(walked, filepath.ToSlash(rel)+" "+d.Type().String())
		}
		return nil
	})
	if !slices.Equal(got, walked) {
		t.Errorf("listed:\n%q\nfilepath.WalkDir:\n%q", got, walked)
	}
}

// TestProjectFilesRootNamedNodeModules: outside git, a project whose own
// directory is named node_modules is listed: only the node_modules
// directories inside it are left out.
func TestProjectFilesRootNamedNodeModules(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node_modules")
	for _, name := range []string{"a.txt", "node_modules/b.js"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inGit := false
	o := &Options{Dir: dir, inGit: &inGit}
	files, err := o.projectFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.name)
	}
	if want := []string{"a.txt"}; !slices.Equal(got, want) {
		t.Errorf("listed %q, want %q", got, want)
	}
}

// TestRelisted: a listing taken after the agent serves the next snapshot
// with ralph's own three files looked at again (it wrote them since), and
// the other files as listed; it does not when one of the three is gone,
// or when there is none.
func TestRelisted(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{PRDFile, ProgressFile, "a.go"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := &Options{Dir: dir}
	listed, err := o.projectFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// ralph's records, and a change it does not know of.
	for name, data := range map[string]string{PRDFile: "a longer prd.json", ProgressFile: "a longer ledger", "a.go": "a longer a.go"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, ok := o.relisted(listed)
	if !ok || len(files) != len(listed) {
		t.Fatalf("relisted: %d files, %v; want the %d listed", len(files), ok, len(listed))
	}
	for _, f := range files {
		was := slices.IndexFunc(listed, func(l fileInfo) bool { return l.name == f.name })
		now, err := os.Lstat(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		switch own := slices.Contains(ownFiles[:], f.name); {
		case own && f.info.Size() != now.Size():
			t.Errorf("%s: %d bytes, want %d as it is now", f.name, f.info.Size(), now.Size())
		case !own && f.info.Size() != listed[was].info.Size():
			t.Errorf("%s: %d bytes, want %d as listed", f.name, f.info.Size(), listed[was].info.Size())
		}
	}
	if listed[slices.IndexFunc(listed, func(l fileInfo) bool { return l.name == PRDFile })].info.Size() != int64(len(PRDFile)) {
		t.Errorf("relisted changed the listing it was given")
	}
	if _, ok := o.relisted(nil); ok {
		t.Errorf("relisted without a listing: ok")
	}
	if err := os.Remove(filepath.Join(dir, ProgressFile)); err != nil {
		t.Fatal(err)
	}
	if _, ok := o.relisted(listed); ok {
		t.Errorf("relisted with %s gone: ok", ProgressFile)
	}
}

// TestLiteralRoots: protected files are looked for under the part of each
// protect glob before its first wildcard, a glob without one naming a file
// or a directory; a root inside another is not listed twice, and a glob
// that begins with a wildcard makes the whole project the root.
func TestLiteralRoots(t *testing.T) {
	for _, tc := range []struct {
		globs []string
		want  []string
	}{
		{[]string{"schema/**", "db/migrations/*.sql", "a/b[12]/c", "schema/x.sql", "SPEC.md"}, []string{"SPEC.md", "a", "db/migrations", "schema"}},
		{[]string{"a", "a-b/**", "a/c/*.go"}, []string{"a", "a-b"}},
		{[]string{"docs/**", "**/*.proto"}, []string{""}},
		{nil, nil},
	} {
		if got := literalRoots(guardPatterns(tc.globs)); !slices.Equal(got, tc.want) {
			t.Errorf("literalRoots(%q) = %q, want %q", tc.globs, got, tc.want)
		}
	}
}

// TestGuardAfterCreated: the guard after the checks (or git) removes the
// protected files they created, as the agent's guard does, whether git
// ignores them or not, and in a work tree outside git too; other new files
// are left alone.
func TestGuardAfterCreated(t *testing.T) {
	for _, inGit := range []bool{false, true} {
		files := map[string]string{"spec/a.txt": "a", ".gitignore": "spec/ignored*\nbuild/\n", "SPEC.md": "s"}
		var work string
		if inGit {
			_, work = gitRepo(t, files)
		} else {
			work = t.TempDir()
			for name, data := range files {
				writeTestFile(t, filepath.Join(work, name), data)
			}
		}
		ctx := context.Background()
		o := &Options{Dir: work, Config: Config{Guard: Guard{Protect: []string{"spec/**", "SPEC.md"}}}}
		s, err := takeFiles(ctx, o, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"spec/new.txt", "spec/ignored.txt", "spec/deep/x.txt", "other.txt", "build/z.txt"} {
			writeTestFile(t, filepath.Join(work, name), name)
		}
		found, err := s.guardAfter(ctx, o, byChecks)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"spec/deep/x.txt: the checks created this protected file; ralph removed it",
			"spec/ignored.txt: the checks created this protected file; ralph removed it",
			"spec/new.txt: the checks created this protected file; ralph removed it",
		}
		if !slices.Equal(found, want) {
			t.Errorf("in git %v: guardAfter = %q, want %q", inGit, found, want)
		}
		for _, name := range []string{"spec/new.txt", "spec/ignored.txt", "spec/deep/x.txt"} {
			if _, err := os.Lstat(filepath.Join(work, name)); err == nil {
				t.Errorf("in git %v: %s is still there", inGit, name)
			}
		}
		for _, name := range []string{"other.txt", "build/z.txt", "spec/a.txt"} {
			if _, err := os.Lstat(filepath.Join(work, name)); err != nil {
				t.Errorf("in git %v: %v", inGit, err)
			}
		}
	}
}

// TestProjectFilesIgnoredProtected: in a git work tree, a protected file
// that git ignores, untracked (git rm --cached) or never tracked, is
// listed all the same, and guarded; an ignored file that is not protected
// is not listed.
func TestProjectFilesIgnoredProtected(t *testing.T) {
	_, work := gitRepo(t, map[string]string{"acceptance/check.sh": "exit 1", "app.txt": "app"})
	mustGit(t, work, "rm", "-q", "--cached", "acceptance/check.sh")
	writeTestFile(t, filepath.Join(work, ".gitignore"), "acceptance/\nbuild/\n")
	writeTestFile(t, filepath.Join(work, "acceptance/more.sh"), "exit 1")
	writeTestFile(t, filepath.Join(work, "build/out.txt"), "out")
	ctx := context.Background()
	o := &Options{Dir: work, Config: Config{Guard: Guard{Protect: []string{"acceptance"}}}}
	files, err := o.projectFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names, want := sortedNames(files), []string{".gitignore", "acceptance/check.sh", "acceptance/more.sh", "app.txt"}; !slices.Equal(names, want) {
		t.Errorf("projectFiles = %q, want %q", names, want)
	}
	s, err := takeFiles(ctx, o, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(work, "acceptance/check.sh"), "exit 0")
	found, _, _, err := s.guard(ctx, o)
	if want := []string{"acceptance/check.sh: the agent changed this protected file; ralph restored it"}; err != nil || !slices.Equal(found, want) {
		t.Errorf("guard = %q, %v; want %q", found, err, want)
	}
	if data, _ := os.ReadFile(filepath.Join(work, "acceptance/check.sh")); string(data) != "exit 1" {
		t.Errorf("acceptance/check.sh = %q after the guard, want %q", data, "exit 1")
	}
}

// sortedNames are the names of files, sorted.
func sortedNames(files []fileInfo) []string {
	var names []string
	for _, f := range files {
		names = append(names, f.name)
	}
	slices.Sort(names)
	return names
}

// writeTestFile writes data to path, making its directories.
func writeTestFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProtectedFilesEverywhere: a protect glob that begins with a wildcard
// has protected files looked for in the whole project, ignored places
// included, but for node_modules, which the walk outside git leaves out
// too.
func TestProtectedFilesEverywhere(t *testing.T) {
	_, work := gitRepo(t, map[string]string{"db/a.sql": "a", ".gitignore": "build/\nnode_modules/\n"})
	for _, name := range []string{"build/b.sql", "build/b.txt", "node_modules/m/c.sql"} {
		writeTestFile(t, filepath.Join(work, name), name)
	}
	o := &Options{Dir: work, Config: Config{Guard: Guard{Protect: []string{"**/*.sql"}}}}
	for _, ignored := range []bool{false, true} {
		files, err := o.protectedFiles(context.Background(), ignored)
		if err != nil {
			t.Fatal(err)
		}
		names := sortedNames(files)
		want := []string{"build/b.sql", "db/a.sql"}
		if ignored {
			want = want[:1]
		}
		if !slices.Equal(names, want) {
			t.Errorf("protectedFiles(%v) = %q, want %q", ignored, names, want)
		}
	}
}

// TestGuardIndex: the agent's guard and the guards after it put back in
// git's index the protected files taken out of it, with the entries the
// index had when the snapshot was taken (a change staged before then
// included), whether the file stayed on disk (git rm --cached) or was
// deleted too (git rm), and whatever git ignores; a protected file git
// did not track then is left untracked.
func TestGuardIndex(t *testing.T) {
	guards := map[string]func(s fileSnapshot, o *Options) ([]string, error){
		byAgent: func(s fileSnapshot, o *Options) ([]string, error) {
			found, _, _, err := s.guard(context.Background(), o)
			return found, err
		},
		byChecks: func(s fileSnapshot, o *Options) ([]string, error) {
			return s.guardAfter(context.Background(), o, byChecks)
		},
	}
	for who, guard := range guards {
		_, work := gitRepo(t, map[string]string{"acceptance/check.sh": "exit 1", "acceptance/gone.sh": "exit 1",
			"acceptance/staged.sh": "v1", "app.txt": "app"})
		writeTestFile(t, filepath.Join(work, "acceptance/staged.sh"), "v2")
		mustGit(t, work, "add", "acceptance/staged.sh")
		writeTestFile(t, filepath.Join(work, "acceptance/local.sh"), "mine")
		o := &Options{Dir: work, Config: Config{Guard: Guard{Protect: []string{"acceptance"}}}}
		before := mustGit(t, work, "ls-files", "--stage", "acceptance")
		s, err := takeFiles(context.Background(), o, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustGit(t, work, "rm", "-q", "--cached", "acceptance/check.sh", "acceptance/staged.sh")
		mustGit(t, work, "rm", "-q", "acceptance/gone.sh")
		writeTestFile(t, filepath.Join(work, ".gitignore"), "acceptance/\n")
		found, err := guard(s, o)
		want := []string{
			"acceptance/check.sh: " + who + " took this protected file out of git's index; ralph put it back in",
			"acceptance/gone.sh: " + who + " deleted this protected file; ralph restored it",
			"acceptance/staged.sh: " + who + " took this protected file out of git's index; ralph put it back in",
		}
		if err != nil || !slices.Equal(found, want) {
			t.Errorf("%s: guard = %q, %v; want %q", who, found, err, want)
		}
		if after := mustGit(t, work, "ls-files", "--stage", "acceptance"); after != before {
			t.Errorf("%s: the index after the guard:\n%s\nwant as before:\n%s", who, after, before)
		}
		if data, _ := os.ReadFile(filepath.Join(work, "acceptance/gone.sh")); string(data) != "exit 1" {
			t.Errorf("%s: acceptance/gone.sh = %q after the guard, want %q", who, data, "exit 1")
		}
	}
}

// TestGuardIndexRunsNoGit: guardIndex runs git only to put an entry back:
// not for a snapshot without a protected file git tracked, one whose
// files the listing shows tracked still, nor one the listing does not
// look for. Here git would fail: the directory is no work tree.
func TestGuardIndexRunsNoGit(t *testing.T) {
	o := &Options{Dir: t.TempDir()}
	tracked := fileState{index: "100644 5716ca5987cbf97d6bb54920bea6adde242d87e6"}
	cases := []struct {
		name      string
		protected map[string]fileState
		files     []fileInfo
		inListing func(string) bool
	}{
		{"no protected file", nil, []fileInfo{{name: "a.txt", index: tracked.index + " 0"}}, nil},
		{"untracked", map[string]fileState{"a.txt": {}}, []fileInfo{{name: "a.txt"}}, nil},
		{"tracked still", map[string]fileState{"a.txt": tracked}, []fileInfo{{name: "a.txt", index: tracked.index + " 0"}}, nil},
		{"not looked for", map[string]fileState{"prompt.md": tracked}, nil, func(string) bool { return false }},
	}
	for _, c := range cases {
		s := fileSnapshot{protected: c.protected}
		found, _, err := s.guardIndex(context.Background(), o, c.files, byAgent, c.inListing)
		if err != nil || len(found) != 0 {
			t.Errorf("%s: guardIndex = %q, %v; want nothing, and no git", c.name, found, err)
		}
	}
	// Taken out: git runs, and fails here.
	s := fileSnapshot{protected: map[string]fileState{"a.txt": tracked}}
	if _, _, err := s.guardIndex(context.Background(), o, []fileInfo{{name: "a.txt"}}, byAgent, nil); err == nil {
		t.Errorf("guardIndex of a file taken out of the index, outside git: no error, want git's")
	}
}

// TestGuardTestsIndex: a test file git tracked that is put back has its
// entry in git's index put back too: to the agent's guard, one taken out
// of the index and ignored (which the listing leaves out) as one deleted
// with git rm; to the checks', one deleted with git rm. A test file git
// did not track stays untracked.
func TestGuardTestsIndex(t *testing.T) {
	_, work := gitRepo(t, map[string]string{"tests/test_a.sh": "a", "tests/test_b.sh": "b", "app.txt": "app"})
	writeTestFile(t, filepath.Join(work, "tests/test_new.sh"), "new")
	o := &Options{Dir: work, Config: Config{Guard: Guard{Tests: []string{"tests/**"}}}}
	ctx := context.Background()
	before := mustGit(t, work, "ls-files", "--stage", "tests")
	s, err := takeFiles(ctx, o, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustGit(t, work, "rm", "-q", "--cached", "tests/test_a.sh")
	mustGit(t, work, "rm", "-q", "tests/test_b.sh")
	writeTestFile(t, filepath.Join(work, ".gitignore"), "tests/test_a.sh\n")
	found, _, _, err := s.guard(ctx, o)
	deleted := func(name, who string) string {
		return name + ": " + who + " deleted this test file (" + ratchetRule + "); ralph restored it"
	}
	if want := []string{deleted("tests/test_a.sh", byAgent), deleted("tests/test_b.sh", byAgent)}; err != nil || !slices.Equal(found, want) {
		t.Errorf("guard = %q, %v; want %q", found, err, want)
	}
	if after := mustGit(t, work, "ls-files", "--stage", "tests"); after != before {
		t.Errorf("the index after the agent's guard:\n%s\nwant as before:\n%s", after, before)
	}
	mustGit(t, work, "rm", "-q", "tests/test_b.sh")
	found, err = s.guardAfter(ctx, o, byChecks)
	if want := []string{deleted("tests/test_b.sh", byChecks)}; err != nil || !slices.Equal(found, want) {
		t.Errorf("guardAfter = %q, %v; want %q", found, err, want)
	}
	if after := mustGit(t, work, "ls-files", "--stage", "tests"); after != before {
		t.Errorf("the index after the checks' guard:\n%s\nwant as before:\n%s", after, before)
	}
}

// TestOnDisk: an index entry is a protected file as it is on disk when its
// object is git's, SHA-1 or SHA-256, for the file's contents, and its mode
// the file's or the snapshot entry's.
func TestOnDisk(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "check.sh"), []byte("exit 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("check.sh", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, format := range []string{"sha1", "sha256"} {
		repo := filepath.Join(dir, format)
		if out, err := exec.Command("git", "init", "-q", "--object-format="+format, repo).CombinedOutput(); err != nil {
			t.Skipf("git init --object-format=%s: %v: %s", format, err, out)
		}
		out, err := exec.Command("git", "-C", repo, "hash-object", "--no-filters", filepath.Join(dir, "check.sh")).Output()
		if err != nil {
			t.Fatal(err)
		}
		ids[format] = strings.TrimSpace(string(out))
		out, err = exec.Command("sh", "-c", "printf check.sh | git -C "+repo+" hash-object --stdin").Output()
		if err != nil {
			t.Fatal(err)
		}
		ids[format+" link"] = strings.TrimSpace(string(out))
	}
	file := fileState{mode: 0o644, index: "100644 " + ids["sha1"]}
	link := fileState{mode: fs.ModeSymlink | 0o777, link: "check.sh", index: "120000 " + ids["sha1 link"]}
	for _, c := range []struct {
		name  string
		st    fileState
		entry string
		want  bool
	}{
		{"check.sh", file, "100644 " + ids["sha1"], true},
		{"check.sh", file, "100644 " + ids["sha256"], true},
		{"check.sh", fileState{mode: 0o755, index: file.index}, "100755 " + ids["sha1"], true},
		{"check.sh", fileState{mode: 0o755, index: file.index}, "100644 " + ids["sha1"], true}, // core.fileMode off
		{"check.sh", file, "100755 " + ids["sha1"], false},
		{"check.sh", file, "100644 " + ids["sha1 link"], false},
		{"check.sh", file, "100644 " + strings.Repeat("0", 40), false},
		{"link", link, "120000 " + ids["sha1 link"], true},
		{"link", link, "120000 " + ids["sha256 link"], true},
		{"link", link, "100644 " + ids["sha1 link"], false},
		{"gone", file, "100644 " + ids["sha1"], false},
	} {
		if got := onDisk(dir, c.name, c.st, c.entry); got != c.want {
			t.Errorf("onDisk(%s, %q) = %v, want %v", c.name, c.entry, got, c.want)
		}
	}
}

// TestSumFileAllocates: the guard sums every protected file after the
// agent, after the checks and after ralph's commit, each iteration; a sum
// reads through a buffer that is used again, not a fresh one of 32 kB (as
// io.Copy makes) for each file, nor os.Open's *os.File and poller set-up.
func TestSumFileAllocates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acceptance_test.go")
	data := []byte("package acceptance\n\nfunc TestIt(t *testing.T) {}\n")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	var err error
	const runs = 100
	allocs := testing.AllocsPerRun(runs, func() {
		sum, _, err = sumFile(path)
	})
	if err != nil || sum != sha256.Sum256(data) {
		t.Fatalf("sumFile: %x, %v; want %x", sum, err, sha256.Sum256(data))
	}
	// A buffer made anew (the pool emptied by a collection) is 32 kB
	// in all the runs, well under the bound.
	before := allocated()
	for range runs {
		sumFile(path)
	}
	bytesPer := (allocated() - before) / runs
	if allocs > 3 || bytesPer > 4096 {
		t.Errorf("sumFile of %d bytes: %v allocations, %d bytes a call; want at most 3 and 4096", len(data), allocs, bytesPer)
	}
}

// allocated is how many bytes the program has allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestIndexWatchListsOnce: checks that write git's index (a check's git
// status does) have the guard after them list the files git knows of
// once, for the test files taken out of the index and the marks set
// alike; and a test file taken out is found, a mark set is cleared.
func TestIndexWatchListsOnce(t *testing.T) {
	_, work := gitRepo(t, map[string]string{"app.txt": "app\n", "tests/a_test.sh": "true\n"})
	log := loggingGit(t)
	ctx := context.Background()
	o := &Options{Dir: work}
	entry := mustGit(t, work, "ls-files", "--stage", "tests/a_test.sh")
	meta, _, _ := strings.Cut(entry, "\t")
	s := fileSnapshot{tests: map[string]fileState{"tests/a_test.sh": {index: stageZero(meta)}}}
	w := s.watchIndex(ctx, o)
	// The checks: a test file out of the index, ignored; a file marked.
	mustGit(t, work, "rm", "-q", "--cached", "tests/a_test.sh")
	if err := os.WriteFile(filepath.Join(work, ".gitignore"), []byte("tests/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, work, "update-index", "--skip-worktree", "app.txt")
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	untracked, err := w.untracked(ctx, o, s)
	if err != nil || !untracked["tests/a_test.sh"] {
		t.Errorf("untracked = %v (%v), want tests/a_test.sh", untracked, err)
	}
	marked, err := w.marked(ctx, o, s, byChecks)
	if err != nil || len(marked) != 1 || !strings.HasPrefix(marked[0], "app.txt: the checks marked this file skip-worktree") {
		t.Errorf("marked = %q (%v), want app.txt's line", marked, err)
	}
	if n, ran := gitRuns(t, log, " ls-files "); n != 1 {
		t.Errorf("git ls-files ran %d times, want 1; git ran:\n%s", n, ran)
	}
}
