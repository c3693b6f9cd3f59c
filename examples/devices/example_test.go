package devices_test

import (
	"fmt"

	"github.com/july/template/examples/devices"
)

// The upload route is logged as a file transfer: part names and sizes,
// never the CSV.
func ExampleAccessRoutes() {
	for _, r := range devices.AccessRoutes() {
		fmt.Println(r.Path, r.Policy)
	}
	// Output:
	// /api/v1/device-assignments file_transfer
}

// A clean service wires the domain with two modules and one migration set.
func ExampleMigrations() {
	set := devices.Migrations()
	fmt.Println(set.Name)
	// Output:
	// examples/devices
}
