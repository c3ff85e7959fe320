package logx

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gompix/gompix/internal/config"
)

// Level is how much is logged: each level includes the ones before it.
type Level int

const (
	Off Level = iota
	Warn
	Info
	Trace
)

var levelNames = []string{"OFF", "WARN", "INFO", "TRACE"}

func (l Level) String() string {
	if l >= Off && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// Subsys is a set of subsystems (a bit each).
type Subsys uint32

const (
	Init   Subsys = 1 << iota // Init and Finalize, configuration
	Path                      // how each peer is reached; device messages' paths
	Coll                      // collectives: algorithm, engine
	GPU                       // the CUDA driver, device buffers, IPC
	Stream                    // StreamComm and enqueued operations
	Wireup                    // the transport's set-up, UCX
	Boot                      // joining the job: launchers, node facts
	All    Subsys = Init | Path | Coll | GPU | Stream | Wireup | Boot
)

// subsysNames lists the subsystems in bit order.
var subsysNames = []string{"init", "path", "coll", "gpu", "stream", "wireup", "boot"}

func (s Subsys) String() string {
	var names []string
	for i, n := range subsysNames {
		if s&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

var (
	cfgDebug = config.NewString("GOMPIX_DEBUG", "",
		"debug log on stderr: a level, WARN, INFO or TRACE (subsystems from GOMPIX_DEBUG_SUBSYS), or a comma-separated list of subsystems that log at INFO "+
			"(path: at Init, per peer, how it is reached and why, then each peer's first device message's path; boot: a launcher's placement the node facts overrule); an unknown word fails Init")
	cfgSubsys = config.NewString("GOMPIX_DEBUG_SUBSYS", "all",
		"subsystems GOMPIX_DEBUG's level applies to: comma-separated from init, path, coll, gpu, stream, wireup, boot, all; ^name leaves one out (all,^coll)")
)

// Settings are a parsed GOMPIX_DEBUG and GOMPIX_DEBUG_SUBSYS.
type Settings struct {
	Level  Level
	Subsys Subsys
}

// Enabled reports whether s logs subsystem sub at level l.
func (s Settings) Enabled(sub Subsys, l Level) bool {
	return l != Off && l <= s.Level && s.Subsys&sub != 0
}

// Error is a GOMPIX_DEBUG or GOMPIX_DEBUG_SUBSYS value with a word that is
// neither a level nor a subsystem.
type Error struct {
	Var, Value, Word string
}

func (e *Error) Error() string {
	return fmt.Sprintf("config: %s=%q: unknown word %q; allowed: levels %s, subsystems %s, all",
		e.Var, e.Value, e.Word, strings.Join(levelNames[1:], ", "), strings.Join(subsysNames, ", "))
}

// Parse reads GOMPIX_DEBUG's value debug and GOMPIX_DEBUG_SUBSYS's subsys.
// A level in debug applies to subsys's subsystems; subsystem names in debug
// (the older spelling) log at INFO, or at debug's level where it names one
// too ("TRACE,path"), and are added to subsys's only when debug names no
// level.
func Parse(debug, subsys string) (Settings, error) {
	var s Settings
	var named Subsys
	for _, w := range words(debug) {
		if l, ok := levelOf(w); ok {
			s.Level = max(s.Level, l)
			continue
		}
		b, ok := subsysOf(w)
		if !ok {
			return Settings{}, &Error{Var: cfgDebug.Name, Value: debug, Word: w}
		}
		named |= b
	}
	if named != 0 {
		s.Subsys = named
		s.Level = max(s.Level, Info)
		return s, nil
	}
	var err error
	s.Subsys, err = parseSubsys(subsys)
	return s, err
}

func parseSubsys(v string) (Subsys, error) {
	ws := words(v)
	if len(ws) == 0 {
		return All, nil
	}
	var set Subsys
	for i, w := range ws {
		minus := strings.HasPrefix(w, "^")
		b, ok := subsysOf(strings.TrimPrefix(w, "^"))
		if !ok {
			return 0, &Error{Var: cfgSubsys.Name, Value: v, Word: w}
		}
		switch {
		case minus && i == 0:
			set = All &^ b // "^coll" alone: everything else
		case minus:
			set &^= b
		default:
			set |= b
		}
	}
	return set, nil
}

func words(v string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '|' }) {
		out = append(out, strings.ToLower(w))
	}
	return out
}

func levelOf(w string) (Level, bool) {
	for i, n := range levelNames {
		if strings.EqualFold(w, n) {
			return Level(i), true
		}
	}
	return Off, false
}

func subsysOf(w string) (Subsys, bool) {
	if w == "all" {
		return All, true
	}
	for i, n := range subsysNames {
		if w == n {
			return 1 << i, true
		}
	}
	return 0, false
}

// FromEnv parses the GOMPIX_DEBUG and GOMPIX_DEBUG_SUBSYS of the process.
func FromEnv() (Settings, error) { return Parse(cfgDebug.Get(), cfgSubsys.Get()) }

// FromGetenv parses them as getenv sees them (launchers' tests pass their
// own environment); GOMPIX_DEBUG_SUBSYS's default when unset is all.
func FromGetenv(getenv func(string) string) (Settings, error) {
	return Parse(getenv(cfgDebug.Name), getenv(cfgSubsys.Name))
}

// masks[l] holds the subsystems that log at level l: On is one atomic load.
var masks [Trace + 1]atomic.Uint32

// Configure makes s the process's settings (Init does, from FromEnv).
func Configure(s Settings) {
	for l := Warn; l <= Trace; l++ {
		var m Subsys
		if s.Enabled(All, l) {
			m = s.Subsys
		}
		masks[l].Store(uint32(m))
	}
}

// On reports whether subsystem sub logs at level l.
func On(sub Subsys, l Level) bool {
	return l > Off && l <= Trace && Subsys(masks[l].Load())&sub != 0
}

var (
	outMu sync.Mutex
	out   io.Writer = os.Stderr
	rank  atomic.Int64
)

// SetRank names the rank in later lines (-1: not known yet, the default).
func SetRank(r int) { rank.Store(int64(r)) }

func init() { rank.Store(-1) }

// SetOutput sends the log to w (tests); it returns the previous writer.
func SetOutput(w io.Writer) io.Writer {
	outMu.Lock()
	defer outMu.Unlock()
	prev := out
	out = w
	return prev
}

// Printf writes one line, "gompix: rank R: SUBSYS LEVEL: message", when
// sub logs at l.
func Printf(sub Subsys, l Level, format string, args ...any) {
	if !On(sub, l) {
		return
	}
	msg := fmt.Sprintf(format, args...)
	prefix := "gompix: "
	if r := rank.Load(); r >= 0 {
		prefix += fmt.Sprintf("rank %d: ", r)
	}
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintf(out, "%s%s %s: %s\n", prefix, sub, l, strings.TrimSuffix(msg, "\n"))
}

// Warnf is Printf at Warn.
func Warnf(sub Subsys, format string, args ...any) { Printf(sub, Warn, format, args...) }

// Infof is Printf at Info.
func Infof(sub Subsys, format string, args ...any) { Printf(sub, Info, format, args...) }

// Tracef is Printf at Trace.
func Tracef(sub Subsys, format string, args ...any) { Printf(sub, Trace, format, args...) }
