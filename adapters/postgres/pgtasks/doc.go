// Package pgtasks is ports.TaskStore on a business's own task table: Store
// runs the five-state contract with conditional updates, and Columns,
// ColumnsSQL and TableDDL give the table its contract columns and checks.
// There is no universal task table; each business owns its table and
// migration.
package pgtasks
