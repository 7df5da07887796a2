package ledger

import "time"

var start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
