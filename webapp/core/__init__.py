"""The domain core: tokens, scenarios, strategies and replay. It imports nothing from Flask."""
