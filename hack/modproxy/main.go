// Command modproxy writes a Go module proxy that serves this repository's
// modules at one version, as the module proxy will serve them once that
// version's tags are pushed: GOPROXY=file://DIR reads it. An importer's go
// command then resolves `go get github.com/failoverkit/failover/karmada@v0.4.0`
// exactly as it will after the release, with no replace directive, so a
// scratch module can prove that the release is consumable before any tag
// exists (hack/importcheck.sh, hack/forkcheck.sh).
//
// Usage (hack/modproxy.sh runs it; this is a module of its own, outside
// go.work):
//
//	cd hack/modproxy && GOWORK=off go run . -o DIR -version vX.Y.Z [-rev REV] [-repo DIR] [MODULEDIR...]
//
// MODULEDIRs are relative to the repository root; none means every module
// that go.work uses, the modules a release tags. Each module's files are
// what git holds at REV, read with git archive as the go command reads a
// tag; with no -rev, what `git add -A` would commit now: tracked and
// untracked files, less those git ignores, so that a check sees the change
// being made. Each module gets, under DIR/<escaped module path>/@v/, the
// files the GOPROXY protocol names: list, VERSION.info, VERSION.mod and
// VERSION.zip. golang.org/x/mod/zip makes the zip by the go command's own
// rules: a nested module's files and vendor directories are left out, and an
// invalid file name or a module over the size limits is an error.
//
// A module's path must be the repository root module's path joined with the
// module's directory: the go command looks for that path's versions in the
// tags DIR/VERSION, which hack/release.sh creates.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	var (
		out     = flag.String("o", "", "the proxy's directory (GOPROXY=file://DIR); created if missing, other modules' files kept")
		version = flag.String("version", "", "the version to serve every module at, vX.Y.Z")
		rev     = flag.String("rev", "", "the git revision to serve; empty: the work tree, as `git add -A` would commit it")
		repo    = flag.String("repo", ".", "a directory inside the repository")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: modproxy -o DIR -version vX.Y.Z [-rev REV] [-repo DIR] [MODULEDIR...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || *version == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, *version, *rev, *repo, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(out, version, rev, repo string, dirs []string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" {
		return fmt.Errorf("-version %q: not a canonical semantic version such as v0.4.0", version)
	}
	root, err := git(repo, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	root = strings.TrimSpace(root)
	tree, when, err := treeAt(root, rev)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		if dirs, err = workspaceModules(root, tree); err != nil {
			return err
		}
	}
	rootMod, err := modulePath(root, tree, ".")
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when.UTC()})
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		dir = path.Clean(filepath.ToSlash(dir))
		if err := publish(out, root, tree, dir, rootMod, version, info); err != nil {
			return err
		}
	}
	return nil
}

// publish writes the proxy's files for the module in dir.
func publish(out, root, tree, dir, rootMod, version string, info []byte) error {
	modPath, err := modulePath(root, tree, dir)
	if err != nil {
		return err
	}
	want := rootMod
	if dir != "." {
		want = rootMod + "/" + dir
	}
	if modPath != want {
		return fmt.Errorf("%s: module %s: the go command would look for it as %s, in this directory's tags", dir, modPath, want)
	}
	m := module.Version{Path: modPath, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(vdir, escVersion)

	subdir := dir
	if dir == "." {
		subdir = ""
	}
	files, err := filesAt(root, tree, subdir)
	if err != nil {
		return err
	}
	var zipped bytes.Buffer
	if err := modzip.Create(&zipped, m, files); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	gomod, err := git(root, nil, "cat-file", "blob", tree+":"+path.Join(subdir, "go.mod"))
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{base + ".zip", zipped.Bytes()},
		{base + ".mod", []byte(gomod)},
		{base + ".info", info},
	} {
		if err := os.WriteFile(f.name, f.data, 0o644); err != nil {
			return err
		}
	}
	if err := addToList(filepath.Join(vdir, "list"), version); err != nil {
		return err
	}
	fmt.Printf("%s@%s: %s (%d bytes)\n", m.Path, m.Version, base+".zip", zipped.Len())
	return nil
}

// filesAt returns the files under subdir of tree, named relative to subdir,
// read with git archive as the go command reads a tagged module (and as
// zip.CreateFromVCS does, which only finds a repository whose .git is a
// directory, not a worktree's).
func filesAt(root, tree, subdir string) ([]modzip.File, error) {
	args := []string{"-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", tree}
	if subdir != "" {
		args = append(args, subdir)
	}
	data, err := git(root, nil, args...)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(strings.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	var files []modzip.File
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, subdir)
		if subdir != "" && (!ok || !strings.HasPrefix(name, "/")) {
			continue
		}
		name = strings.TrimPrefix(name, "/")
		if name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		files = append(files, archived{name, f})
	}
	return files, nil
}

// archived is a file of git archive's zip, as golang.org/x/mod/zip reads it.
type archived struct {
	name string
	f    *zip.File
}

func (a archived) Path() string                 { return a.name }
func (a archived) Lstat() (os.FileInfo, error)  { return a.f.FileInfo(), nil }
func (a archived) Open() (io.ReadCloser, error) { return a.f.Open() }

// treeAt returns the git tree to serve and the time its versions carry: rev's
// tree and commit time, or with no rev, the tree `git add -A` would commit
// (written to the object store through a throwaway index; the repository's
// own index, work tree and refs are left as they are) and now.
func treeAt(root, rev string) (tree string, when time.Time, err error) {
	if rev != "" {
		tree, err = git(root, nil, "rev-parse", "--verify", rev+"^{tree}")
		if err != nil {
			return "", time.Time{}, err
		}
		t, err := git(root, nil, "log", "-1", "--format=%cI", rev)
		if err != nil {
			return "", time.Time{}, err
		}
		when, err = time.Parse(time.RFC3339, strings.TrimSpace(t))
		return strings.TrimSpace(tree), when, err
	}
	index, err := git(root, nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", time.Time{}, err
	}
	tmp, err := os.CreateTemp("", "modproxy-index-")
	if err != nil {
		return "", time.Time{}, err
	}
	defer os.Remove(tmp.Name())
	// A copy of the index keeps its file stats, so git add rehashes only
	// what changed.
	if err := copyFile(tmp, strings.TrimSpace(index)); err != nil {
		return "", time.Time{}, err
	}
	env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
	if _, err := git(root, env, "add", "-A"); err != nil {
		return "", time.Time{}, err
	}
	tree, err = git(root, env, "write-tree")
	return strings.TrimSpace(tree), time.Now(), err
}

func copyFile(dst *os.File, src string) error {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		// A repository without commits has no index yet.
		return dst.Close()
	}
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := io.Copy(dst, in); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// workspaceModules returns the directories go.work uses, relative to root.
func workspaceModules(root, tree string) ([]string, error) {
	data, err := git(root, nil, "cat-file", "blob", tree+":go.work")
	if err != nil {
		return nil, err
	}
	wf, err := modfile.ParseWork("go.work", []byte(data), nil)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, u := range wf.Use {
		dirs = append(dirs, path.Clean(u.Path))
	}
	return dirs, nil
}

// modulePath returns the module path declared by dir's go.mod in tree.
func modulePath(root, tree, dir string) (string, error) {
	data, err := git(root, nil, "cat-file", "blob", tree+":"+path.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	p := modfile.ModulePath([]byte(data))
	if p == "" {
		return "", fmt.Errorf("%s/go.mod: no module line", dir)
	}
	return p, nil
}

// addToList adds version to the proxy's list file, one version a line.
func addToList(file, version string) error {
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	return os.WriteFile(file, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// git runs git in dir with env added to the environment and returns its
// standard output.
func git(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(stdout), nil
}
