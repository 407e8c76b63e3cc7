module github.com/ttldb/ttldb

go 1.24

require (
	github.com/google/btree v1.1.3
	github.com/stretchr/testify v1.12.1
	go.mongodb.org/mongo-driver/v2 v2.8.2
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
