package gracefulevict_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/failoverkit/failover/gracefulevict"
)

func TestParseTransitBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want gracefulevict.TransitBudget
		err  bool
	}{
		{name: "zero is unlimited", in: "0", want: 0},
		{name: "a budget of one", in: "1", want: 1},
		{name: "a budget of three", in: "3", want: 3},
		// More than an int holds allows every eviction, as the largest
		// int does; refused, the flag's smaller budget would apply.
		{name: "a budget beyond an int", in: "99999999999999999999", want: math.MaxInt},
		{name: "a negative beyond an int is refused", in: "-99999999999999999999", err: true},
		{name: "spaces are refused", in: " 3", err: true},
		{name: "negative is refused", in: "-1", err: true},
		{name: "not a number is refused", in: "one", err: true},
		{name: "a fraction is refused", in: "1.5", err: true},
		{name: "empty is refused", in: "", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gracefulevict.ParseTransitBudget(tc.in)
			if tc.err {
				want := fmt.Sprintf("gracefulevict: budget of clusters in transit %q: want a non-negative integer (0: unlimited)", tc.in)
				if err == nil || err.Error() != want {
					t.Fatalf("ParseTransitBudget(%q) = %v, %v; want the error %q", tc.in, got, err, want)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseTransitBudget(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestTransitBudgetAllows(t *testing.T) {
	two := []string{"member1", "member2"}
	for _, tc := range []struct {
		name      string
		budget    gracefulevict.TransitBudget
		inTransit []string
		want      bool
	}{
		{name: "unlimited allows any number", budget: 0, inTransit: two, want: true},
		{name: "negative is unlimited", budget: -1, inTransit: two, want: true},
		{name: "none in transit under a budget of one", budget: 1, inTransit: nil, want: true},
		{name: "one in transit uses up a budget of one", budget: 1, inTransit: two[:1], want: false},
		{name: "one in transit leaves room under a budget of two", budget: 2, inTransit: two[:1], want: true},
		{name: "more than the budget in transit", budget: 1, inTransit: two, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.budget.Allows(tc.inTransit); got != tc.want {
				t.Fatalf("TransitBudget(%d).Allows(%v) = %v, want %v", tc.budget, tc.inTransit, got, tc.want)
			}
		})
	}
}

func TestInTransitCountsEveryTask(t *testing.T) {
	tasks := []gracefulevict.Task{
		{FromCluster: "member1", Producer: "TaintManager"},
		{FromCluster: "member2", Producer: "ApplicationFailover"},
		{FromCluster: "member3", Producer: "TaintManager", PurgeMode: "Never"},
	}
	got := gracefulevict.InTransit(tasks)
	if fmt.Sprint(got) != "[member1 member2 member3]" {
		t.Fatalf("InTransit = %v, want every task's cluster in order", got)
	}
	if got := gracefulevict.InTransit(nil); len(got) != 0 {
		t.Fatalf("InTransit(nil) = %v, want none", got)
	}
}
