package config

import (
	"math"
	"time"

	"github.com/prometheus/common/model"
)

// Capacity configures the capacity headroom alert (see docs/capacity.md).
type Capacity struct {
	// HeadroomMargin is the headroom below which VLLMSLOCapacityHeadroomLow
	// raises a ticket: when even the upper end of the headroom's 90%
	// prediction interval (1 − load / the capacity's upper end) is below
	// it, the load is within that share of the predicted capacity. In
	// [0, 1); 0 turns the alert off.
	HeadroomMargin float64 `yaml:"headroom_margin"`
	// HeadroomFor is how long the headroom must stay below the margin
	// before the ticket fires.
	HeadroomFor model.Duration `yaml:"headroom_for"`
}

// The capacity defaults.
const (
	DefaultHeadroomMargin = 0.2
	DefaultHeadroomFor    = model.Duration(15 * time.Minute)
)

// applyCapacityDefaults fills the unset capacity settings; an explicit
// headroom_margin of 0 stays 0 (the alert off).
func applyCapacityDefaults(c *Capacity, present func(path string) bool) {
	if !present("capacity.headroom_margin") {
		c.HeadroomMargin = DefaultHeadroomMargin
	}
	if c.HeadroomFor == 0 {
		c.HeadroomFor = DefaultHeadroomFor
	}
}

func validateCapacity(c Capacity) *fieldError {
	if math.IsNaN(c.HeadroomMargin) || c.HeadroomMargin < 0 || c.HeadroomMargin >= 1 {
		return errorf("capacity.headroom_margin", "%v is outside [0, 1)", c.HeadroomMargin)
	}
	if c.HeadroomFor < 0 {
		return errorf("capacity.headroom_for", "%s must not be negative", c.HeadroomFor)
	}
	return nil
}
