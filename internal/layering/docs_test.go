package layering

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoFiles lists the files git would commit (tracked, plus untracked ones
// not ignored), relative to the repository root, and the root itself.
func repoFiles(t *testing.T) (string, map[string]bool) {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v (the docs check reads the tree through git)", err)
	}
	root := strings.TrimSpace(string(top))
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" || strings.HasPrefix(f, "vendor/") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, f)); err == nil { // deleted but still tracked: gone
			files[f] = true
		}
	}
	return root, files
}

// textFile says whether the docs check reads f: sources, scripts and pages.
func textFile(f string) bool {
	switch path.Ext(f) {
	case ".go", ".md", ".sh", ".py", ".c", ".h", ".cu":
		return true
	}
	return path.Base(f) == "Makefile"
}

var (
	// A path inside the repository that a comment, script or page cites,
	// optionally followed by the section it means: "§3", `, "Fast calls"`.
	citeRE = regexp.MustCompile(`(?:^|[^\w./-])((?:docs|scripts)/[\w./-]*\w\.(?:md|svg|csv|py|sh|c))(?: (§[0-9]+(?:\.[0-9]+)*)|,? \\?"([^"\\]+)\\?")?`)
	// A Markdown link's target, and the code spans whose text is no link.
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	// Files outside the repository that sources must not cite (the
	// design and the GPU machine's notes live in docs/), and pages that
	// were folded into others.
	goneRE = regexp.MustCompile(`\b(?:DESIGN|DEVICE)` + `\.md\b|shared/` + `anchors|docs/` + `raw/|performance-` + `host\.md`)
)

// headings returns a Markdown page's headings and their GitHub anchors.
func headings(page []byte) (titles []string, anchors map[string]bool) {
	anchors = map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(string(page), "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		titles = append(titles, title)
		a := slug(title)
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return titles, anchors
}

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces to hyphens.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestDocReferences: every docs/ or scripts/ path that a Go comment, a
// script or a page cites exists, with the section it names; every relative
// link between pages resolves (anchor included); and nothing cites the
// files outside the repository that the design once lived in.
func TestDocReferences(t *testing.T) {
	root, files := repoFiles(t)
	isDir := func(p string) bool {
		for f := range files {
			if strings.HasPrefix(f, p+"/") {
				return true
			}
		}
		return false
	}
	pages := map[string][]byte{}
	page := func(p string) []byte {
		if b, ok := pages[p]; ok {
			return b
		}
		b, _ := os.ReadFile(filepath.Join(root, p))
		pages[p] = b
		return b
	}
	checked := 0
	for f := range files {
		if !textFile(f) {
			continue
		}
		text := page(f)
		fence := false
		for i, line := range bytes.Split(text, []byte("\n")) {
			at := func() string { return f + ":" + strconv.Itoa(i+1) }
			if m := goneRE.Find(line); m != nil {
				t.Errorf("%s cites %s, which is not in the repository (see docs/README.md for the pages)", at(), m)
			}
			for _, m := range citeRE.FindAllSubmatch(line, -1) {
				p, sec, title := string(m[1]), string(m[2]), string(m[3])
				checked++
				if !files[p] {
					t.Errorf("%s cites %s, which does not exist", at(), p)
					continue
				}
				titles, _ := headings(page(p))
				if sec != "" && !hasSection(titles, strings.TrimPrefix(sec, "§")) {
					t.Errorf("%s cites %s %s: the page has no heading numbered so", at(), p, sec)
				}
				if title != "" && path.Ext(p) == ".md" && !hasTitle(titles, title) {
					t.Errorf("%s cites %s, %q: the page has no such heading", at(), p, title)
				}
			}
			if path.Ext(f) != ".md" {
				continue
			}
			if bytes.HasPrefix(line, []byte("```")) {
				fence = !fence
			}
			if fence {
				continue
			}
			for _, m := range linkRE.FindAllSubmatch(codeSpanRE.ReplaceAll(line, nil), -1) {
				target := string(m[1])
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, frag, _ := strings.Cut(target, "#")
				p := f
				if file != "" {
					p = path.Clean(path.Join(path.Dir(f), file))
				}
				if !files[p] && !isDir(p) {
					t.Errorf("%s links to %s, which does not exist", at(), target)
					continue
				}
				if frag != "" && path.Ext(p) == ".md" {
					if _, anchors := headings(page(p)); !anchors[frag] {
						t.Errorf("%s links to %s: %s has no heading with anchor #%s", at(), target, p, frag)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d references checked: is the tree readable?", checked)
	}
}

// hasSection says whether a heading is numbered n ("## 6. GPU data paths").
func hasSection(titles []string, n string) bool {
	for _, h := range titles {
		if strings.HasPrefix(h, n+". ") || strings.HasPrefix(h, n+" ") {
			return true
		}
	}
	return false
}

// hasTitle says whether a heading contains the quoted title.
func hasTitle(titles []string, title string) bool {
	for _, h := range titles {
		if strings.Contains(h, title) {
			return true
		}
	}
	return false
}
