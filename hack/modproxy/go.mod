module github.com/failoverkit/failover/hack/modproxy

go 1.25.0

require golang.org/x/mod v0.32.0
