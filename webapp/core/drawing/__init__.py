"""All geometry: the well's blocks, axis and layers' strip, and the comparison chart, as numbers a template only places."""
