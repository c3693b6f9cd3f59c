package postgres

// Translate exposes translate to the external tests.
var Translate = translate
