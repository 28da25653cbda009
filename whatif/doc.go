// Package whatif answers what-if questions about a stream: the WAL it would
// have been under other settings (WhatIf, made by NewWhatIf from what a
// first pass learnt, FillWhatIfInput: wal_compression, full_page_writes,
// checkpoint spacing, XLOG_BLCKSZ, wal_level), with an ImagePipeline
// recompressing images on every core; the checkpoint settings the stream
// was written with (CurrentSettings, from the spacing of its checkpoints)
// and the advice drawn from both (Advise).
package whatif
