package ttldb

import (
	"bytes"
	"encoding/gob"
)

func encodeOp(op Op) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(op)
	return b.Bytes(), err
}

func decodeOp(b []byte) (Op, error) {
	var op Op
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&op)
	return op, err
}
