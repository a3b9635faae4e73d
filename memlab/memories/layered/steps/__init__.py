"""The working-memory pipeline, one step per module (gathered in ``..working``)."""
