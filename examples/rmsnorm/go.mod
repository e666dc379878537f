module github.com/ptxgen/ptxgen/examples/rmsnorm

go 1.26.0

replace github.com/ptxgen/ptxgen => ../..

require github.com/ptxgen/ptxgen v0.0.0-00010101000000-000000000000

require (
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	gorgonia.org/cu v0.9.6 // indirect
)

tool github.com/ptxgen/ptxgen/ptxgen
