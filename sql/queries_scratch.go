package store

// Query names of queries_scratch.sql (scratch.go).
const (
	qScratchMarkerCount  = "scratch-marker-count"
	qScratchBaseTables   = "scratch-base-tables"
	qScratchTableHasRows = "scratch-table-has-rows"
	qScratchCreate       = "scratch-create-markers"
	qScratchMark         = "scratch-mark"
	qCreateDatabase      = "create-database"
	qDropDatabase        = "drop-database"
)
