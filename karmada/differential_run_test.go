package karmada_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The number of generated cases TestDifferential runs, and its seed. CI runs
// the default; TESTING.md shows the larger run, FAILOVER_DIFF_CASES=100000.
const (
	diffCasesEnv = "FAILOVER_DIFF_CASES"
	diffSeedEnv  = "FAILOVER_DIFF_SEED"
	diffCasesCI  = 10000
)

func envInt(t testing.TB, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// TestDifferential runs the pre-scheduling check and Karmada v1.18's own
// scheduler side by side on generated failovers (see genCase). It fails on
// any case the library calls feasible that Karmada does not place (unsound),
// and on any case the library calls infeasible that Karmada places for a
// reason the library's doc does not give (see classify); it reports how
// often the library says infeasible where Karmada places.
func TestDifferential(t *testing.T) {
	n := envInt(t, diffCasesEnv, diffCasesCI)
	seed := envInt(t, diffSeedEnv, 1)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var tl tally
	for tl.compared < int(n) {
		tl.generated++
		c := genCase(randSource{r})
		if c == nil {
			tl.unscheduled++
			continue
		}
		tl.add(c, c.check())
	}
	t.Logf("seed %d: %d cases compared (%d generated, %d that Karmada could not schedule in the first place); agree feasible %d, agree infeasible %d",
		seed, tl.compared, tl.generated, tl.unscheduled, tl.agreeYes, tl.agreeNo)
	t.Logf("unsound (library feasible, Karmada does not place): %d", tl.nUnsound)
	t.Logf("incomplete (library infeasible, Karmada places): %d = %.3f%% of compared, %.3f%% of Karmada's placements",
		tl.nIncomplete, 100*float64(tl.nIncomplete)/float64(tl.compared), 100*float64(tl.nIncomplete)/float64(tl.agreeYes+tl.nIncomplete))
	for _, class := range slices.Sorted(maps.Keys(tl.byClass)) {
		name := class
		if name == "" {
			name = "no reason the library's doc gives"
		}
		t.Logf("  incomplete, %s: %d = %.3f%% of compared", name, tl.byClass[class], 100*float64(tl.byClass[class])/float64(tl.compared))
	}
	var covered []string
	for _, f := range slices.Sorted(maps.Keys(tl.features)) {
		covered = append(covered, fmt.Sprintf("%s %d", f, tl.features[f]))
	}
	t.Logf("cases by what they exercise: %s", strings.Join(covered, ", "))
	for _, s := range tl.unsound {
		t.Errorf("unsound:\n%s", s)
	}
	for _, s := range tl.incomplete {
		t.Errorf("incomplete for no reason the library's doc gives:\n%s", s)
	}
}

// FuzzDifferential is TestDifferential's comparison on cases the fuzzer
// makes: its bytes are the generator's choices (byteSource). A case it
// fails on is kept in testdata/fuzz/FuzzDifferential and runs with every
// go test from then on.
func FuzzDifferential(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 0, 2, 1, 1, 0, 0, 5, 6, 2, 1, 7, 3, 3, 0, 1, 2, 4, 4, 9})
	f.Add([]byte("region and cluster spread over three regions, Duplicated"))
	f.Add([]byte("\x05\x00\x07\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := genCase(&byteSource{data})
		if c == nil {
			return
		}
		v := c.check()
		switch {
		case v.ours.Feasible && !v.placed:
			t.Fatalf("unsound:\n%s\n%s", c, v)
		case !v.ours.Feasible && v.placed && v.class == "":
			t.Fatalf("incomplete for no reason the library's doc gives:\n%s\n%s", c, v)
		}
	})
}
