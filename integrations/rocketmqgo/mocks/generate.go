// Package mocks holds gomock mocks (go.uber.org/mock, package mode, -typed)
// of the interfaces the rocketmqgo module defines. Only tests import it.
//
// Every go:generate line is in this file; regenerate with
//
//	go generate ./mocks
//
// mockgen is pinned by this module's go.mod (a tool directive); ci.sh
// regenerates the mocks and fails when the result differs from what is
// committed.
package mocks

//go:generate go run go.uber.org/mock/mockgen -typed -destination=client.go -package=mocks github.com/mqfault/mqfault/integrations/rocketmqgo Client
