package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestConfigurationPage: the committed docs/guide/configuration.md is what
// the generator makes from the registry, so a variable added, removed or
// redescribed in code shows up in the docs (or fails here).
func TestConfigurationPage(t *testing.T) {
	var b bytes.Buffer
	if err := writeConfigPage(&b); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/guide/configuration.md")
	if err != nil {
		t.Fatalf("%v: generate it with `%s`", err, configPageCommand)
	}
	if !bytes.Equal(page, b.Bytes()) {
		t.Errorf("docs/guide/configuration.md differs from the GOMPIX_* registry: regenerate it with `%s`", configPageCommand)
	}
	for _, want := range []string{"| `GOMPIX_SPIN` | `-1` |", "| `GOMPIX_ALLREDUCE_ALGORITHM` | `auto` |", "Code generated"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("generated page lacks %q", want)
		}
	}
}

// TestInfoMarkdown: `gompix info --markdown` prints the page and nothing
// else (no UCX or GPU probing), so the regeneration command works anywhere.
func TestInfoMarkdown(t *testing.T) {
	var out bytes.Buffer
	if code := execute([]string{"info", "--markdown"}, &out); code != 0 {
		t.Fatalf("gompix info --markdown: exit status %d", code)
	}
	var want bytes.Buffer
	if err := writeConfigPage(&want); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("gompix info --markdown printed:\n%s", out.String())
	}
}
