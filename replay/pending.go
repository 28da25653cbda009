package replay

import (
	"fmt"
	"io/fs"

	"github.com/walscope/walscope/backup"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// PendingBackup is a Backup still being opened on another goroutine: a
// compressed tar is read to its end before its files are known (pg_control
// is its last member), about 0.3 s for a gzip'd 340 MB tar; a replay given
// it starts at once, from the label's start. Most of a replay needs no file
// of the backup: from the backup's start every page's first change carries
// its image. What does waits for the backup: a block read from it, the
// relation maps, pg_twophase, the system identifier (checked at the end).
// The block size is the caller's guess until then (BLCKSZ 8192 but for
// builds made otherwise): the caller compares it with the opened backup's
// and replays again if they differ.
type PendingBackup struct {
	cores     stream.Cores // the run's, one taken while opening (OpenBackupAhead)
	start     xlog.LSN
	blockSize uint32
	done      chan struct{}
	b         Backup
	err       error
	opened    *backup.Backup // OpenBackupAhead's, once done
}

// OpenBackupAhead starts open on another goroutine and returns the backup
// being opened, which starts at start (its label's START WAL LOCATION,
// backup.ReadLabel) and whose blocks are taken to be blockSize bytes until
// it is open (Opened then tells its own): a replay given it runs meanwhile.
// The opening takes one of cores (when one is free; nil: none) until it
// is done, and a replay given the backup reads its WAL on the others, as
// any other stream of the run given cores does (rows.StartPrescan): the
// inflating of a compressed tar, on one goroutine, keeps a core to itself.
func OpenBackupAhead(start xlog.LSN, blockSize uint32, cores stream.Cores, open func() (*backup.Backup, error)) *PendingBackup {
	p := NewPendingBackup(start, blockSize)
	p.cores = cores
	took := cores.TryTake()
	go func() {
		b, err := open()
		if took {
			cores.Give()
		}
		if err != nil {
			p.Set(nil, err)
			return
		}
		p.opened = b // before Set: Opened reads it after done is closed
		p.Set(OpenBackup(b), nil)
	}()
	return p
}

// Opened waits for the backup OpenBackupAhead opens, and returns it or
// why it could not be opened.
func (p *PendingBackup) Opened() (*backup.Backup, error) {
	<-p.done
	return p.opened, p.err
}

// NewPendingBackup returns a backup that starts at start (its label's
// START WAL LOCATION) with blocks of blockSize bytes, to be given by Set.
func NewPendingBackup(start xlog.LSN, blockSize uint32) *PendingBackup {
	return &PendingBackup{start: start, blockSize: blockSize, done: make(chan struct{})}
}

// Set gives the opened backup, or why it could not be opened (then every
// read of it fails with err). Called once.
func (p *PendingBackup) Set(b Backup, err error) {
	p.b, p.err = b, err
	if b == nil && err == nil {
		p.err = fs.ErrInvalid
	}
	close(p.done)
}

// Wait returns the backup once it is opened.
func (p *PendingBackup) Wait() (Backup, error) {
	<-p.done
	return p.b, p.err
}

// Ready tells whether Set was called.
func (p *PendingBackup) Ready() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StartLSN is the label's, known before the backup is open.
func (p *PendingBackup) StartLSN() xlog.LSN { return p.start }

// BlockSize is the guess NewPendingBackup was given.
func (p *PendingBackup) BlockSize() uint32 { return p.blockSize }

// SystemID waits for the backup (0 if it could not be opened).
func (p *PendingBackup) SystemID() uint64 {
	b, err := p.Wait()
	if err != nil {
		return 0
	}
	return b.SystemID()
}

func (p *PendingBackup) NBlocks(loc decode.RelFileLocator, fork decode.ForkNumber) (uint32, error) {
	b, err := p.Wait()
	if err != nil {
		return 0, err
	}
	return b.NBlocks(loc, fork)
}

func (p *PendingBackup) ReadBlock(loc decode.RelFileLocator, fork decode.ForkNumber, blk uint32, dst []byte) error {
	b, err := p.Wait()
	if err != nil {
		return err
	}
	return b.ReadBlock(loc, fork, blk, dst)
}

func (p *PendingBackup) ReadFile(name string) ([]byte, error) {
	b, err := p.Wait()
	if err != nil {
		return nil, err
	}
	return b.ReadFile(name)
}

func (p *PendingBackup) ReadDir(name string) ([]string, error) {
	b, err := p.Wait()
	if err != nil {
		return nil, err
	}
	return b.ReadDir(name)
}

// DataChecksums is the opened backup's (checkPage).
func (p *PendingBackup) DataChecksums() bool {
	b, err := p.Wait()
	if err != nil {
		return false
	}
	c, ok := b.(checksummed)
	return ok && c.DataChecksums()
}

// RelPath names a relation file as the opened backup does (errors).
func (p *PendingBackup) RelPath(loc decode.RelFileLocator, fork decode.ForkNumber) string {
	b, _ := p.Wait()
	if rp, ok := b.(interface {
		RelPath(decode.RelFileLocator, decode.ForkNumber) string
	}); ok {
		return rp.RelPath(loc, fork)
	}
	return fmt.Sprintf("%d/%d/%d", loc.SpcOID, loc.DBOID, loc.RelNumber)
}
