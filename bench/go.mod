module github.com/july/template/bench

go 1.26.8
