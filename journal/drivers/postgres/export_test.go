package postgres

// Undone is undone, for the external tests.
var Undone = undone
