package topup

// ParseCreate exposes the create body's parser to the benchmarks.
var ParseCreate = parseCreate
