"""Concrete actors: models placed on a runtime (thrusters, sensors, controllers, environment...)."""
