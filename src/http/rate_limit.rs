//! Per-client-IP token bucket for the public write endpoints (docs/design.md §4).
//! Each replica limits on its own; the limits are per replica.

use std::net::IpAddr;
use std::num::NonZeroU32;

use actix_web::HttpRequest;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter, clock::Clock};

use crate::config::LimitsConfig;
use crate::error::{ApiError, ApiResult};

pub struct PublicWriteLimiter {
    limiter: Option<DefaultKeyedRateLimiter<IpAddr>>,
}

impl PublicWriteLimiter {
    /// `public_write_per_second = 0` disables the limit.
    pub fn new(cfg: &LimitsConfig) -> PublicWriteLimiter {
        let limiter = NonZeroU32::new(cfg.public_write_per_second).map(|rate| {
            let burst = NonZeroU32::new(cfg.public_write_burst).unwrap_or(rate);
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        PublicWriteLimiter { limiter }
    }

    /// Takes one token for the caller's IP, or answers 429 with the wait in Retry-After.
    pub fn check(&self, req: &HttpRequest) -> ApiResult<()> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        let Some(ip) = req.peer_addr().map(|a| a.ip()) else {
            return Ok(());
        };
        limiter.check_key(&ip).map_err(|not_until| {
            let wait = not_until.wait_time_from(limiter.clock().now());
            ApiError::RateLimited {
                retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
            }
        })
    }

    /// Forgets idle clients so the key map does not grow without bound.
    pub fn forget_idle(&self) {
        if let Some(limiter) = &self.limiter {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}
