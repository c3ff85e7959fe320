package config

import (
	"os"
	"testing"
	"time"
)

func TestTypedVars(t *testing.T) {
	env := map[string]string{"GOMPIX_TEST_INT": "42", "GOMPIX_TEST_BAD": "x", "GOMPIX_TEST_DUR": "7ms"}
	lookup = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	defer func() { lookup = os.LookupEnv }()
	i := NewInt("GOMPIX_TEST_INT", 1, "an int")
	if v, err := i.Get(); err != nil || v != 42 {
		t.Fatalf("int: %v %v", v, err)
	}
	bad := NewInt("GOMPIX_TEST_BAD", 1, "malformed")
	if _, err := bad.Get(); err == nil {
		t.Fatal("malformed int accepted")
	}
	def := NewString("GOMPIX_TEST_DEF", "dflt", "unset")
	if def.Get() != "dflt" {
		t.Fatal("default not used")
	}
	d := NewDuration("GOMPIX_TEST_DUR", time.Second, "a duration")
	if v, err := d.Get(); err != nil || v != 7*time.Millisecond {
		t.Fatalf("duration: %v %v", v, err)
	}
	found := 0
	for _, v := range Vars() {
		if v.Name == "GOMPIX_TEST_INT" || v.Name == "GOMPIX_TEST_DEF" {
			found++
		}
	}
	if found != 2 {
		t.Fatal("Vars does not list declared variables")
	}
}
