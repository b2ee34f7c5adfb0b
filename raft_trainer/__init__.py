"""raft_trainer"""
