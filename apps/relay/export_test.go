package main

// NewDeadLetterFunc exposes the worker's dead-letter hook to the e2e tests
// (package main_test) without exporting it from the command.
var NewDeadLetterFunc = newDeadLetterFunc
