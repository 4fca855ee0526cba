"""describe"""
