package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	return nil
}
