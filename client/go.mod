module github.com/queen-go/queen/client

go 1.24.0

require github.com/google/uuid v1.6.0
