package main

import (
	"errors"

	"github.com/failoverkit/failover/examples/fleetsim/internal/whatif"
)

// writeWhatIfFigure draws the plan to path.
func writeWhatIfFigure(r *whatif.Report, path string) error {
	_ = r
	_ = path
	return errors.New("fleetsim: --plot with --what-if: not yet")
}
