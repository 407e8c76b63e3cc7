package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"github.com/ttldb/ttldb"
	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// boltStore is raft's log store and stable store in one bbolt file
// (raft.db under Config.Dir). Its layout is hashicorp/raft-boltdb's,
// byte for byte, so that a directory written by an earlier ttldb (which
// used raft-boltdb) opens as it is, and one written here opens with it:
//
//   - bucket "logs": key the entry's index (8 bytes, big-endian), value
//     the raft.Log in msgpack (go-msgpack's MsgpackHandle, times in its
//     older extension format, as raft-boltdb writes by default);
//   - bucket "conf": the stable store's keys and values as raft gives them
//     (SetUint64: 8 bytes, big-endian).
//
// It is ours rather than raft-boltdb's because raft-boltdb/v2 links the
// archived github.com/boltdb/bolt (for its v1 migration) and requires an old
// bbolt; see the README's "Log and stable store".
type boltStore struct {
	db *bbolt.DB
}

var (
	bucketLogs = []byte("logs")
	bucketConf = []byte("conf")

	// errKeyNotFound is the stable store's answer for a key never set.
	// raft compares the message ("not found") to tell a new node from a
	// failed read, as with every store it ships with.
	errKeyNotFound = errors.New("not found")
)

// lockWait bounds the wait for raft.db's file lock: another process (or
// Node) holding it is a configuration error to report, not to wait out.
const lockWait = time.Second

// The entries' msgpack handles, configured once (a handle is safe for
// concurrent use once configured). Times are written in go-msgpack's
// older extension format, as raft-boltdb writes them by default, so that
// earlier versions read them; decoding reads either format.
var (
	encodeHandle = func() *codec.MsgpackHandle {
		h := &codec.MsgpackHandle{}
		h.TimeNotBuiltin = true
		return h
	}()
	decodeHandle = &codec.MsgpackHandle{}
)

// openBoltStore opens (creating if missing) the bbolt file at path.
func openBoltStore(path string) (*boltStore, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: lockWait})
	if errors.Is(err, bberrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: replica: %s is in use by another node (one Dir per node): %w", ttldb.ErrInvalidOptions, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("replica: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketLogs); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketConf)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("replica: open %s: %w", path, err)
	}
	return &boltStore{db: db}, nil
}

// Close closes the file.
func (s *boltStore) Close() error { return s.db.Close() }

// FirstIndex returns the first index stored, 0 for none.
func (s *boltStore) FirstIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bbolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().First(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// LastIndex returns the last index stored, 0 for none.
func (s *boltStore) LastIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bbolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().Last(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog reads the entry at idx into log (raft.ErrLogNotFound if absent).
func (s *boltStore) GetLog(idx uint64, log *raft.Log) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(indexKey(idx))
		if v == nil {
			return raft.ErrLogNotFound
		}
		// v is valid only in the transaction: a decoder reading from an
		// io.Reader copies every byte it keeps (one over the bytes
		// themselves may alias them).
		return codec.NewDecoder(bytes.NewReader(v), decodeHandle).Decode(log)
	})
}

// StoreLog stores one entry.
func (s *boltStore) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores entries in one transaction (one commit, so one pair of
// fsyncs, for the batch raft hands over).
func (s *boltStore) StoreLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			var buf bytes.Buffer
			if err := codec.NewEncoder(&buf, encodeHandle).Encode(l); err != nil {
				return err
			}
			if err := b.Put(indexKey(l.Index), buf.Bytes()); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRange deletes the entries from min to max, both included.
func (s *boltStore) DeleteRange(min, max uint64) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(indexKey(min)); k != nil && binary.BigEndian.Uint64(k) <= max; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set stores a stable key.
func (s *boltStore) Set(k, v []byte) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketConf).Put(k, v)
	})
}

// Get reads a stable key (errKeyNotFound if never set).
func (s *boltStore) Get(k []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketConf).Get(k)
		if v == nil {
			return errKeyNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// SetUint64 stores a stable key's number.
func (s *boltStore) SetUint64(k []byte, v uint64) error {
	return s.Set(k, indexKey(v))
}

// GetUint64 reads a stable key's number (errKeyNotFound if never set).
func (s *boltStore) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("replica: raft.db: stable key %q holds %d bytes, not a number", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func indexKey(u uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), u)
}
