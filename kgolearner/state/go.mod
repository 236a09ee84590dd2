module github.com/learnerassignor/learner/kgolearner/state

go 1.26.0

require (
	github.com/learnerassignor/learner v0.0.0
	github.com/learnerassignor/learner/kgolearner v0.0.0
	github.com/stretchr/testify v1.12.1
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kfake v0.0.0-20260918054303-01f206a7e32c
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.45.0 // indirect
)

replace (
	github.com/learnerassignor/learner => ../../
	github.com/learnerassignor/learner/kgolearner => ../
)
