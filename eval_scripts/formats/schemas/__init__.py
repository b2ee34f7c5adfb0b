"""JSON Schemas shipped with the package (a package so that setup.cfg package_data picks them up)."""
