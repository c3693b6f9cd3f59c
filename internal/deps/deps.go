package deps
import (
 _ "github.com/uptrace/bun"
 _ "github.com/uptrace/bun/dialect/pgdialect"
 _ "github.com/uptrace/bun/migrate"
 _ "github.com/jackc/pgx/v5/stdlib"
 _ "github.com/redis/rueidis"
 _ "github.com/hibiken/asynq"
 _ "github.com/labstack/echo/v4"
 _ "go.uber.org/fx"
 _ "github.com/stretchr/testify/require"
 _ "github.com/ory/dockertest/v3"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/golang-jwt/jwt/v5"
 _ "github.com/google/uuid"
)
