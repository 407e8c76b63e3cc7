module github.com/ttldb/ttldb

go 1.26
