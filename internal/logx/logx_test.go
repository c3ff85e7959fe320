package logx

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		debug, subsys string
		want          Settings
	}{
		{"", "", Settings{Off, All}},
		{"WARN", "", Settings{Warn, All}},
		{"info", "all", Settings{Info, All}},
		{"TRACE", "coll,gpu", Settings{Trace, Coll | GPU}},
		{"INFO", "^coll", Settings{Info, All &^ Coll}},
		{"INFO", "all,^coll,^boot", Settings{Info, All &^ (Coll | Boot)}},
		{"path", "", Settings{Info, Path}}, // the older spelling
		{"path,boot", "coll", Settings{Info, Path | Boot}},
		{"TRACE,path", "", Settings{Trace, Path}},
		{"INFO|TRACE", "stream wireup", Settings{Trace, Stream | Wireup}},
	} {
		got, err := Parse(c.debug, c.subsys)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q, %q) = %+v, %v; want %+v", c.debug, c.subsys, got, err, c.want)
		}
	}
}

func TestParseUnknown(t *testing.T) {
	for _, c := range []struct{ debug, subsys, word, v string }{
		{"verbose", "", "verbose", "GOMPIX_DEBUG"},
		{"path,paths", "", "paths", "GOMPIX_DEBUG"},
		{"INFO", "coll,nic", "nic", "GOMPIX_DEBUG_SUBSYS"},
		{"INFO", "^bogus", "^bogus", "GOMPIX_DEBUG_SUBSYS"},
	} {
		_, err := Parse(c.debug, c.subsys)
		var e *Error
		if !errors.As(err, &e) || e.Word != c.word || e.Var != c.v {
			t.Errorf("Parse(%q, %q): %v; want an *Error for %s naming %q", c.debug, c.subsys, err, c.v, c.word)
			continue
		}
		for _, allowed := range []string{"WARN", "INFO", "TRACE", "init", "path", "coll", "gpu", "stream", "wireup", "boot"} {
			if !strings.Contains(err.Error(), allowed) {
				t.Errorf("%v does not list %q", err, allowed)
			}
		}
	}
}

func TestPrintfLevels(t *testing.T) {
	var buf bytes.Buffer
	prev := SetOutput(&buf)
	defer SetOutput(prev)
	defer Configure(Settings{})
	SetRank(3)
	defer SetRank(-1)
	Configure(Settings{Info, Coll | Path})
	Infof(Coll, "allreduce %d B", 8)
	Tracef(Coll, "not at INFO")
	Infof(GPU, "not this subsystem")
	Warnf(Path, "warned")
	want := "gompix: rank 3: coll INFO: allreduce 8 B\ngompix: rank 3: path WARN: warned\n"
	if buf.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", buf.String(), want)
	}
	if On(Coll, Trace) || !On(Coll, Info) || On(Coll, Off) || On(Init, Warn) {
		t.Error("On disagrees with the settings")
	}
	Configure(Settings{})
	if On(Coll, Warn) {
		t.Error("On after Configure(off)")
	}
}

// BenchmarkOnOff is the cost of a disabled line's guard.
func BenchmarkOnOff(b *testing.B) {
	Configure(Settings{})
	n := 0
	for i := 0; i < b.N; i++ {
		if On(Coll, Trace) {
			n++
		}
	}
	if n != 0 {
		b.Fatal(n)
	}
}
